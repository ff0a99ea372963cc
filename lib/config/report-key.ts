import { readFileSync } from 'node:fs';
import { UNSIGNED_POLICIES, type UnsignedPolicy } from '../report/authorize-report.ts';
import { MIN_REPORT_KEY_CHARS, type ReportKey, reportKeyOf } from '../report/report-token.ts';
import { ConfigError } from './config-error.ts';
import {
  type ParameterKeyText,
  putParameterCommand,
  REPORT_KEY_PARAMETER_ENV,
  reportKeyParameter,
} from './report-key-parameter.ts';
import { type ConfigInput, type Flags, flagSet, setting } from './setting.ts';
import { bool, oneOf } from './values.ts';

const KEY_REMEDY = `use a random one of at least ${MIN_REPORT_KEY_CHARS} characters, e.g. from \`openssl rand -hex 32\`, the same for the runners and the report endpoints of a deployment`;

/**
 * The deployment's report key: KHRUN_REPORT_KEY_FILE (a mounted Secret), KHRUN_REPORT_KEY, or, for the
 * Lambda functions, the SSM parameter KHRUN_REPORT_KEY_PARAMETER names, whose text the entrypoint read
 * (fromParameter: lib/aws/report-key-parameter.ts). Runners sign each run's reporting URL with it;
 * `khrun serve` and the report Lambda check those URLs with it. Every source is held to the same length
 * and charset. undefined when none is set. KHRUN_REPORT_KEY_PARAMETER without its text is a ConfigError:
 * this entrypoint does not read SSM, and running without the key would hand out unsigned URLs.
 */
export function reportKey(
  input: ConfigInput<Flags>,
  fromParameter?: ParameterKeyText,
): ReportKey | undefined {
  const parameter = reportKeyParameter(input);
  if (parameter !== undefined) {
    if (fromParameter?.parameter !== parameter) {
      throw new ConfigError({
        setting: REPORT_KEY_PARAMETER_ENV,
        value: parameter,
        problem: 'is read only by the runCheck and report Lambda functions',
        remedy: 'here, give the key in KHRUN_REPORT_KEY_FILE (a mounted Secret) or KHRUN_REPORT_KEY instead',
      });
    }
    return checkedKey(fromParameter.text.trim(), {
      source: `the SSM parameter ${parameter} (${REPORT_KEY_PARAMETER_ENV})`,
      remedy: `${KEY_REMEDY}: \`${putParameterCommand(parameter, { overwrite: true })}\``,
    });
  }
  const file = setting(input, { env: ['KHRUN_REPORT_KEY_FILE'] });
  const inline = setting(input, { env: ['KHRUN_REPORT_KEY'] });
  if (file.text !== undefined && inline.text !== undefined) {
    throw new ConfigError({
      setting: 'KHRUN_REPORT_KEY_FILE',
      value: file.text,
      problem: 'and KHRUN_REPORT_KEY are both set',
      remedy: 'set one of them (the file, for a key from a mounted Secret)',
    });
  }
  if (file.text !== undefined) {
    let text: string;
    try {
      text = readFileSync(file.text, 'utf8');
    } catch (error) {
      throw new ConfigError({
        setting: 'KHRUN_REPORT_KEY_FILE',
        value: file.text,
        problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        remedy: 'give the path of a file that holds the key (a mounted Secret key)',
        cause: error,
      });
    }
    return checkedKey(text.trim(), {
      source: `the file ${file.text} (KHRUN_REPORT_KEY_FILE)`,
      remedy: KEY_REMEDY,
    });
  }
  if (inline.text !== undefined)
    return checkedKey(inline.text.trim(), { source: 'KHRUN_REPORT_KEY', remedy: KEY_REMEDY });
  return undefined;
}

/** A key's text held to MIN_REPORT_KEY_CHARS of printable ASCII; the key itself is never put in a message. */
function checkedKey(text: string, where: { source: string; remedy: string }): ReportKey {
  if (text.length < MIN_REPORT_KEY_CHARS || !/^[\x21-\x7e]+$/.test(text)) {
    throw new ConfigError({
      setting: where.source,
      problem:
        text.length < MIN_REPORT_KEY_CHARS
          ? `holds a key of ${text.length} characters, too short to be a secret`
          : 'holds a key with spaces or characters outside printable ASCII',
      remedy: where.remedy,
    });
  }
  return reportKeyOf(text);
}

/**
 * KHRUN_REPORT_UNSIGNED: what a shared endpoint does with reports to the bare v2 path. The default refuses
 * them when a key is configured (every run khrun starts has a signed URL; a refusal costs no API request)
 * and otherwise keeps v2's identification. Behind NAT (the report Lambda) the source address names no pod,
 * so `header-and-ip` is refused there.
 */
export function unsignedPolicy(
  input: ConfigInput<Flags>,
  opts: { key: ReportKey | undefined; natted: boolean },
): UnsignedPolicy {
  const s = setting(input, { env: ['KHRUN_REPORT_UNSIGNED'] });
  const fallback: UnsignedPolicy = opts.key ? 'refuse' : opts.natted ? 'header' : 'header-and-ip';
  const policy = oneOf(s, UNSIGNED_POLICIES, fallback);
  if (opts.natted && policy === 'header-and-ip') {
    throw new ConfigError({
      setting: s.source,
      value: s.text,
      problem:
        'cannot be header-and-ip here: checker pods reach this endpoint through NAT, so a source address names no pod',
      remedy:
        'use header (v2.5+ Go clients) or refuse, and give runners KHRUN_REPORT_KEY so their pods get signed URLs',
    });
  }
  return policy;
}

/** The same, for an endpoint that pods reach through NAT: never by source address. */
export function nattedUnsignedPolicy(
  input: ConfigInput<Flags>,
  key: ReportKey | undefined,
): Exclude<UnsignedPolicy, 'header-and-ip'> {
  const policy = unsignedPolicy(input, { key, natted: true });
  return policy === 'header-and-ip' ? 'header' : policy;
}

/** The opt-in to an endpoint without a report key: --allow-unsigned-reports or KHRUN_ALLOW_UNSIGNED_REPORTS. */
export const ALLOW_UNSIGNED_FLAG = 'allow-unsigned-reports';
export const ALLOW_UNSIGNED_ENV = 'KHRUN_ALLOW_UNSIGNED_REPORTS';

/**
 * A shared report endpoint (`khrun serve`, the report Lambda) fails closed: without a report key it takes
 * only unsigned reports, each identified by a pod LIST that any caller can set off, so it starts only
 * when that is chosen explicitly (the flag where the entrypoint has flags, else the variable). Judged after
 * every other setting, so a wrong one is named first. Throws ConfigError saying what to set: with
 * `parameter` (an entrypoint that reads KHRUN_REPORT_KEY_PARAMETER), that first.
 */
export function requireKeyOrOptIn(
  input: ConfigInput<Flags>,
  key: ReportKey | undefined,
  opts: { hasFlag: boolean; parameter: boolean },
): void {
  if (key) return;
  const allowed =
    (opts.hasFlag && flagSet(input, ALLOW_UNSIGNED_FLAG)) ||
    bool(setting(input, { env: [ALLOW_UNSIGNED_ENV] }), false);
  if (allowed) return;
  const optIn = opts.hasFlag
    ? `--${ALLOW_UNSIGNED_FLAG} or ${ALLOW_UNSIGNED_ENV}=true`
    : `${ALLOW_UNSIGNED_ENV}=true`;
  const why =
    'without a report key this endpoint cannot check signed reporting URLs, ' +
    'and every unsigned report it is sent costs the API server a pod LIST';
  const same = `the same as the runners' (${KEY_REMEDY.replace(/^use /, '')})`;
  const unsigned = `or, to take only v2-style unsigned reports anyway, set ${optIn}`;
  if (opts.parameter) {
    throw new ConfigError({
      setting: REPORT_KEY_PARAMETER_ENV,
      problem: `is unset, and so are KHRUN_REPORT_KEY_FILE and KHRUN_REPORT_KEY: ${why}`,
      remedy:
        `set ${REPORT_KEY_PARAMETER_ENV} to the name of the SSM SecureString parameter holding the key, ${same}, ` +
        `made with \`${putParameterCommand('/khrun/report-key')}\` (serverless.yml's reportKeyParameter); ${unsigned}`,
    });
  }
  throw new ConfigError({
    setting: 'KHRUN_REPORT_KEY_FILE',
    problem: `and KHRUN_REPORT_KEY are both unset: ${why}`,
    remedy: `set KHRUN_REPORT_KEY_FILE to a file holding the key (a mounted Secret) or KHRUN_REPORT_KEY, ${same}; ${unsigned}`,
  });
}
