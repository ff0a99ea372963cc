import type { ReadTail } from '../logs/read-tail.ts';

/** Where a tail is read from. */
export interface TailKey {
  namespace: string;
  pod: string;
  container?: string;
}

export type ReadTailFn = (key: TailKey) => Promise<ReadTail>;

/**
 * A status server's reads of checker log tails, each kept ttlMs (answer or failure alike) in at most
 * maxEntries entries, oldest dropped first, and shared by concurrent requests: however often the page or
 * the API is asked, a pod's log is read from the API server at most once per ttlMs. The pod of a recorded
 * run has finished, or is finishing, so its log barely changes.
 */
export function cachedTails(
  read: ReadTailFn,
  opts: { nowMs: () => number; ttlMs?: number; maxEntries?: number },
): ReadTailFn {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 256;
  const entries = new Map<string, { atMs: number; result: Promise<ReadTail> }>();
  return (key) => {
    const id = `${key.namespace}/${key.pod}/${key.container ?? ''}`;
    const nowMs = opts.nowMs();
    const hit = entries.get(id);
    if (hit && nowMs - hit.atMs < ttlMs) return hit.result;
    entries.delete(id);
    const result = read(key);
    // Settled either way; a failure is kept as long as an answer, so a gone pod is not asked for again.
    result.catch(() => undefined);
    entries.set(id, { atMs: nowMs, result });
    while (entries.size > maxEntries) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
    return result;
  };
}
