import { readFileSync } from 'node:fs';
import { UNSIGNED_POLICIES, type UnsignedPolicy } from '../report/authorize-report.ts';
import { MIN_REPORT_KEY_CHARS, type ReportKey, reportKeyOf } from '../report/report-token.ts';
import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';
import { oneOf } from './values.ts';

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
