import { readFileSync } from 'node:fs';
import { type NotifyConfig, NotifyConfigError, parseNotifyConfig } from '../notify/config.ts';
import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';

export const NOTIFY_CONFIG_FILE_ENV = 'KHRUN_NOTIFY_CONFIG_FILE';
export const NOTIFY_CONFIG_ENV = 'KHRUN_NOTIFY_CONFIG';
export const NOTIFY_CONFIG_PARAMETER_ENV = 'KHRUN_NOTIFY_CONFIG_PARAMETER';

/** The notification configuration's text as a Lambda handler read it from its SSM parameter. */
export interface NotifyParameterText {
  parameter: string;
  text: string;
}

const SOURCES = [NOTIFY_CONFIG_FILE_ENV, NOTIFY_CONFIG_ENV, NOTIFY_CONFIG_PARAMETER_ENV] as const;
const REMEDY = 'see docs/alerts.md for the document (channels:, defaults:)';

/**
 * The notification configuration (docs/alerts.md), from one of: KHRUN_NOTIFY_CONFIG_FILE (the path of a
 * mounted Secret key), KHRUN_NOTIFY_CONFIG (the document itself, e.g. an env var from a Secret), or, in
 * the Lambda functions, the SSM SecureString KHRUN_NOTIFY_CONFIG_PARAMETER names, whose text the handler
 * read (fromParameter). Channel secrets may also come as `<field>File` paths inside it. undefined when
 * none is set: no notifications. A document that cannot be used is a ConfigError naming the key.
 */
export function notifyConfig(
  input: ConfigInput<Flags>,
  fromParameter?: NotifyParameterText,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): NotifyConfig | undefined {
  const set = SOURCES.map((env) => setting(input, { env: [env] })).filter((s) => s.text !== undefined);
  if (set.length > 1)
    throw new ConfigError({
      setting: set.map((s) => s.source).join(' and '),
      problem: 'are all set: the notification configuration has one source',
      remedy: `set only one of ${SOURCES.join(', ')}`,
    });
  const [chosen] = set;
  if (!chosen?.text) return undefined;
  let text: string;
  let where: string;
  if (chosen.source === NOTIFY_CONFIG_PARAMETER_ENV) {
    if (fromParameter?.parameter !== chosen.text)
      throw new ConfigError({
        setting: NOTIFY_CONFIG_PARAMETER_ENV,
        value: chosen.text,
        problem: 'is read only by the runCheck and tick Lambda functions',
        remedy: `here, give the configuration in ${NOTIFY_CONFIG_FILE_ENV} (a mounted Secret) or ${NOTIFY_CONFIG_ENV}`,
      });
    text = fromParameter.text;
    where = `the SSM parameter ${chosen.text} (${NOTIFY_CONFIG_PARAMETER_ENV})`;
  } else if (chosen.source === NOTIFY_CONFIG_FILE_ENV) {
    where = `the file ${chosen.text} (${NOTIFY_CONFIG_FILE_ENV})`;
    try {
      text = readFile(chosen.text);
    } catch (error) {
      throw new ConfigError({
        setting: NOTIFY_CONFIG_FILE_ENV,
        value: chosen.text,
        problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        remedy: 'give the path of the mounted Secret key that holds the notification configuration',
        cause: error,
      });
    }
  } else {
    text = chosen.text;
    where = NOTIFY_CONFIG_ENV;
  }
  try {
    return parseNotifyConfig(text, readFile);
  } catch (error) {
    if (!(error instanceof NotifyConfigError)) throw error;
    throw new ConfigError({
      setting: `${error.at} in ${where}`,
      problem: error.problem,
      remedy: `${error.remedy}; ${REMEDY}`,
      cause: error,
    });
  }
}
