import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';

/**
 * The name of the SSM SecureString parameter that holds the deployment's report key. The runCheck and
 * report Lambda functions read it at run time (serverless.yml's reportKeyParameter), so neither the
 * template nor the functions' environment holds the key.
 */
export const REPORT_KEY_PARAMETER_ENV = 'KHRUN_REPORT_KEY_PARAMETER';

/** The report key's text as read from its parameter by the entrypoint, not yet checked (report-key.ts does). */
export interface ParameterKeyText {
  /** The parameter's name, as KHRUN_REPORT_KEY_PARAMETER gives it. */
  parameter: string;
  /** Its decrypted value. */
  text: string;
}

/** An SSM parameter name (`/khrun/report-key`, `report-key`) or a parameter's ARN: what GetParameter takes. */
const PARAMETER_NAME = /^(arn:[\w-]+:ssm:[\w-]+:\d{12}:parameter\/)?[\w.\-/]{1,2048}$/;

/** The one command that makes (or, with --overwrite, replaces) a good key in the parameter. */
export function putParameterCommand(parameter: string, opts: { overwrite?: boolean } = {}): string {
  const overwrite = opts.overwrite ? ' --overwrite' : '';
  return `aws ssm put-parameter --name ${parameter} --type SecureString${overwrite} --value "$(openssl rand -hex 32)"`;
}

/**
 * KHRUN_REPORT_KEY_PARAMETER, checked: undefined when unset (or empty, as serverless.yml writes it for no
 * key). Set together with KHRUN_REPORT_KEY or KHRUN_REPORT_KEY_FILE it is a ConfigError naming the one to
 * drop: the key has one source, so a rotation in SSM is never shadowed by a stale copy. Pure.
 */
export function reportKeyParameter(input: ConfigInput<Flags>): string | undefined {
  const s = setting(input, { env: [REPORT_KEY_PARAMETER_ENV] });
  if (s.text === undefined) return undefined;
  for (const other of ['KHRUN_REPORT_KEY', 'KHRUN_REPORT_KEY_FILE']) {
    if (setting(input, { env: [other] }).text === undefined) continue;
    throw new ConfigError({
      setting: REPORT_KEY_PARAMETER_ENV,
      value: s.text,
      problem: `and ${other} are both set`,
      remedy: `unset ${other}: the key is read from the SSM parameter (or unset ${REPORT_KEY_PARAMETER_ENV} to use ${other})`,
    });
  }
  if (!PARAMETER_NAME.test(s.text)) {
    throw new ConfigError({
      setting: REPORT_KEY_PARAMETER_ENV,
      value: s.text,
      problem: 'is no SSM parameter name',
      remedy:
        'give the name of the SecureString parameter that holds the key (letters, digits and _.-/, e.g. /khrun/report-key) or its ARN',
    });
  }
  return s.text;
}
