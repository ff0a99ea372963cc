import { NOTIFY_CONFIG_PARAMETER_ENV, type NotifyParameterText } from '../config/notify-options.ts';
import type { Env } from '../config/setting.ts';
import type { ParameterReader } from './report-key-parameter.ts';

/**
 * The notification configuration's text from the SSM SecureString KHRUN_NOTIFY_CONFIG_PARAMETER names
 * (its channel secrets stay out of the template and the functions' environment); undefined when unset.
 * A parameter that cannot be read fails the invocation with a message naming it: running without the
 * configuration would record transitions nobody is told of.
 */
export async function notifyConfigFromParameter(
  env: Env,
  read: ParameterReader,
): Promise<NotifyParameterText | undefined> {
  const parameter = env[NOTIFY_CONFIG_PARAMETER_ENV];
  if (!parameter) return undefined;
  try {
    return { parameter, text: await read(parameter) };
  } catch (error) {
    const code = (error as { name?: string }).name ?? 'error';
    throw new Error(
      `${NOTIFY_CONFIG_PARAMETER_ENV}=${JSON.stringify(parameter)}: the notification configuration cannot be read from SSM (${code}): ` +
        'create it as a SecureString (aws ssm put-parameter --type SecureString --name ... --value file://notify.yaml) and grant the function ssm:GetParameter on it',
      { cause: error },
    );
  }
}
