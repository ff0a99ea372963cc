/**
 * A batch run's list: the khchecks one invocation drives at once (`khrun run --check A --check B`,
 * KHRUN_BATCH from the tick's batch Jobs, the runCheck Lambda's `checks`). Only khchecks: khjobs and
 * HealthChecks keep one invocation each.
 */
export interface BatchEntry {
  namespace: string;
  name: string;
}

/**
 * At most this many checks per invocation: every check of a batch holds a watch and, when the runner hosts
 * the report endpoint, is served by one process; the tick's batches are far smaller (KHRUN_BATCH_SIZE,
 * default 50). A larger list is refused, not split: the invoker chose the batch.
 */
export const MAX_BATCH_CHECKS = 200;

/**
 * How many of a batch's checks run at once: above it, the rest wait for a slot. Each run mostly waits (a
 * watch, timers), so this bounds the claims and pod creations a batch starts in a burst and its open
 * connections, not the work; a batch of the tick's default size starts every check at once.
 */
export const BATCH_CONCURRENCY = 50;

/** What is wrong with a list, for the caller to word as its own error (a flag, a variable, an event). */
export interface BatchProblem {
  /** The entry at fault, when one is. */
  index?: number;
  problem: string;
  remedy: string;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const isNamespace = (s: string) => s.length <= 63 && DNS1123_LABEL.test(s);
const isName = (s: string) => s.length <= 253 && DNS1123_SUBDOMAIN.test(s);

/**
 * The first problem of a list, else undefined: empty, more than MAX_BATCH_CHECKS, a namespace or name that
 * is no Kubernetes name, or a check named twice (two runs of one check in one process would only be busy
 * against each other). Pure.
 */
export function batchProblem(entries: readonly BatchEntry[]): BatchProblem | undefined {
  if (entries.length === 0) return { problem: 'names no check', remedy: 'name at least one khcheck' };
  if (entries.length > MAX_BATCH_CHECKS)
    return {
      problem: `names ${entries.length} checks, more than the ${MAX_BATCH_CHECKS} one invocation runs`,
      remedy: `split it into batches of at most ${MAX_BATCH_CHECKS}`,
    };
  const seen = new Set<string>();
  for (const [index, e] of entries.entries()) {
    if (!isNamespace(e.namespace))
      return {
        index,
        problem: `${JSON.stringify(e.namespace)} is not a namespace name (lower-case letters, digits and "-", at most 63)`,
        remedy: 'give the namespace of the khcheck, such as kuberhealthy',
      };
    if (!isName(e.name))
      return {
        index,
        problem: `${JSON.stringify(e.name)} is not a khcheck name (lower-case letters, digits, "-" and ".")`,
        remedy: "give the khcheck's metadata.name",
      };
    const key = `${e.namespace}/${e.name}`;
    if (seen.has(key)) return { index, problem: `names ${key} twice`, remedy: 'name each check once' };
    seen.add(key);
  }
  return undefined;
}

/** `ns/name`, as the batch's output and logs name a check. */
export const entryLabel = (e: BatchEntry) => `${e.namespace}/${e.name}`;
