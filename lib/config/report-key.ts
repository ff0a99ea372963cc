import { readFileSync } from 'node:fs';
import { UNSIGNED_POLICIES, type UnsignedPolicy } from '../report/authorize-report.ts';
import { MIN_REPORT_KEY_CHARS, type ReportKey, reportKeyOf } from '../report/report-token.ts';
import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, flagSet, setting } from './setting.ts';
import { bool, oneOf } from './values.ts';

const KEY_REMEDY = `use a random one of at least ${MIN_REPORT_KEY_CHARS} characters, e.g. from \`openssl rand -hex 32\`, the same for the runners and the report endpoints of a deployment`;

/**
 * The deployment's report key: KHRUN_REPORT_KEY_FILE (a mounted Secret) or KHRUN_REPORT_KEY. Runners sign
 * each run's reporting URL with it; `khrun serve` and the report Lambda check those URLs with it.
 * undefined when neither is set.
 */
export function reportKey(input: ConfigInput<Flags>): ReportKey | undefined {
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
  let text: string;
  let source: string;
  if (file.text !== undefined) {
    source = `the file ${file.text} (KHRUN_REPORT_KEY_FILE)`;
    try {
      text = readFileSync(file.text, 'utf8').trim();
    } catch (error) {
      throw new ConfigError({
        setting: 'KHRUN_REPORT_KEY_FILE',
        value: file.text,
        problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        remedy: 'give the path of a file that holds the key (a mounted Secret key)',
        cause: error,
      });
    }
  } else if (inline.text !== undefined) {
    source = 'KHRUN_REPORT_KEY';
    text = inline.text.trim();
  } else {
    return undefined;
  }
  // The key itself is never put in a message: it is a credential.
  if (text.length < MIN_REPORT_KEY_CHARS || !/^[\x21-\x7e]+$/.test(text)) {
    throw new ConfigError({
      setting: source,
      problem:
        text.length < MIN_REPORT_KEY_CHARS
          ? `holds a key of ${text.length} characters, too short to be a secret`
          : 'holds a key with spaces or characters outside printable ASCII',
      remedy: KEY_REMEDY,
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
 * every other setting, so a wrong one is named first. Throws ConfigError saying what to set.
 */
export function requireKeyOrOptIn(
  input: ConfigInput<Flags>,
  key: ReportKey | undefined,
  opts: { hasFlag: boolean },
): void {
  if (key) return;
  const allowed =
    (opts.hasFlag && flagSet(input, ALLOW_UNSIGNED_FLAG)) ||
    bool(setting(input, { env: [ALLOW_UNSIGNED_ENV] }), false);
  if (allowed) return;
  const optIn = opts.hasFlag
    ? `--${ALLOW_UNSIGNED_FLAG} or ${ALLOW_UNSIGNED_ENV}=true`
    : `${ALLOW_UNSIGNED_ENV}=true`;
  throw new ConfigError({
    setting: 'KHRUN_REPORT_KEY_FILE',
    problem:
      'and KHRUN_REPORT_KEY are both unset: without a report key this endpoint cannot check signed reporting URLs, ' +
      'and every unsigned report it is sent costs the API server a pod LIST',
    remedy:
      `set KHRUN_REPORT_KEY_FILE to a file holding the key (a mounted Secret) or KHRUN_REPORT_KEY, the same as the runners' (${KEY_REMEDY.replace(/^use /, '')}); ` +
      `or, to take only v2-style unsigned reports anyway, set ${optIn}`,
  });
}
