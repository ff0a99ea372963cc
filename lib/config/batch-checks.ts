import { type BatchEntry, batchProblem } from '../batch/batch-entry.ts';
import { ConfigError } from './config-error.ts';

/** The variable a batch runner Job carries instead of CHECK_NAME/CHECK_NAMESPACE (the tick writes it). */
export const BATCH_ENV = 'KHRUN_BATCH';
const BATCH_EXAMPLE = '[{"namespace":"NS","name":"CHECK"}]';
const EVENT_EXAMPLE = '{"checks":[{"kind":"khcheck","namespace":"NS","checkName":"CHECK"}]}';

/** The list as validated (lib/batch/batch-entry.ts), else a ConfigError naming the entry at fault. */
function checked(entries: BatchEntry[], setting: (index?: number) => string): BatchEntry[] {
  const found = batchProblem(entries);
  if (!found) return entries;
  const { index, problem, remedy } = found;
  throw new ConfigError({ setting: setting(index), problem, remedy });
}

/** An entry as the invoker wrote it, for a message (cut short: a message is no place for a whole list). */
const got = (item: unknown) => ` (got ${(JSON.stringify(item) ?? String(item)).slice(0, 120)})`;

/**
 * KHRUN_BATCH: a JSON array of {"namespace", "name"}, both strings, nothing else (a misspelt field is
 * refused rather than ignored, so it cannot run the wrong check). Pure.
 */
export function batchFromJson(text: string, source = BATCH_ENV): BatchEntry[] {
  const refuse = (setting: string, problem: string): never => {
    throw new ConfigError({ setting, problem, remedy: `give a JSON array such as ${BATCH_EXAMPLE}` });
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    refuse(source, `is not JSON (${(error as Error).message}) (got ${text.slice(0, 120)})`);
  }
  if (!Array.isArray(parsed)) return refuse(source, `must be a JSON array of checks${got(parsed)}`);
  const entries = parsed.map((item: unknown, i) => {
    const at = `${source}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      return refuse(at, `must be an object {"namespace", "name"}${got(item)}`);
    const fields = item as Record<string, unknown>;
    const extra = Object.keys(fields).find((k) => k !== 'namespace' && k !== 'name');
    if (extra !== undefined) refuse(at, `has a field "${extra}"; an entry holds namespace and name only`);
    if (typeof fields.namespace !== 'string' || typeof fields.name !== 'string')
      return refuse(at, `needs "namespace" and "name", each a string${got(item)}`);
    return { namespace: fields.namespace, name: fields.name };
  });
  return checked(entries, (i) => (i === undefined ? source : `${source}[${i}]`));
}

/** Repeated `--check NAME`, all in one namespace (-n, else CHECK_NAMESPACE, else the context's). Pure. */
export function batchFromNames(names: readonly string[], namespace: string): BatchEntry[] {
  return checked(
    names.map((name) => ({ namespace, name })),
    () => '--check',
  );
}

/**
 * The runCheck Lambda's batch event's `checks`: an array of {"kind": "khcheck", "namespace", "checkName"}
 * (kind may be left out; only khchecks run in batches, as the tick sends them). Pure.
 */
export function batchFromEvent(checks: unknown): BatchEntry[] {
  const refuse = (setting: string, problem: string): never => {
    throw new ConfigError({ setting, problem, remedy: `invoke with ${EVENT_EXAMPLE}` });
  };
  const list = '"checks" in the event';
  if (!Array.isArray(checks)) return refuse(list, `must be an array of checks${got(checks)}`);
  const entries = checks.map((item: unknown, i) => {
    const at = `"checks[${i}]" in the event`;
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      return refuse(at, `must be an object${got(item)}`);
    const fields = item as Record<string, unknown>;
    const extra = Object.keys(fields).find((k) => !['kind', 'namespace', 'checkName'].includes(k));
    if (extra !== undefined) refuse(at, `has a field "${extra}" (kind, namespace, checkName)`);
    if ((fields.kind ?? 'khcheck') !== 'khcheck')
      refuse(
        at,
        `names a kind other than khcheck: khjobs and HealthChecks run one per invocation${got(item)}`,
      );
    if (typeof fields.namespace !== 'string' || typeof fields.checkName !== 'string')
      return refuse(at, `needs "namespace" and "checkName", each a string${got(item)}`);
    return { namespace: fields.namespace, name: fields.checkName };
  });
  return checked(entries, (i) => (i === undefined ? list : `"checks[${i}]" in the event`));
}
