import type { V1Pod } from '@kubernetes/client-node';
import type { CallerLookup } from './identify-caller.ts';

/** How long an answer of the API server is reused for the same question (a pod's run label, an IP). */
export const DEFAULT_LOOKUP_TTL_MS = 2_000;
/** Answers kept at most; the oldest goes first. */
export const DEFAULT_LOOKUP_ENTRIES = 1_024;

interface Entry {
  pods: Promise<V1Pod[]>;
  /** When the answer came; undefined while it is being asked. */
  settledMs: number | undefined;
}

/**
 * A CallerLookup for unsigned reports, whose every request would otherwise cost the API server pod LISTs:
 * concurrent lookups of the same run UUID or IP share one request (single flight), and an answer, "no pod"
 * included, is reused for ttlMs. A failed request is shared by the lookups waiting on it, never kept.
 */
export function sharedLookup(
  inner: CallerLookup,
  opts: { nowMs: () => number; ttlMs?: number; maxEntries?: number },
): CallerLookup {
  const ttlMs = opts.ttlMs ?? DEFAULT_LOOKUP_TTL_MS;
  const maxEntries = opts.maxEntries ?? DEFAULT_LOOKUP_ENTRIES;
  const entries = new Map<string, Entry>();
  const once = (key: string, ask: () => Promise<V1Pod[]>): Promise<V1Pod[]> => {
    const held = entries.get(key);
    if (held && (held.settledMs === undefined || opts.nowMs() - held.settledMs < ttlMs)) return held.pods;
    entries.delete(key);
    while (entries.size >= maxEntries) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
    const entry: Entry = { pods: ask(), settledMs: undefined };
    entries.set(key, entry);
    entry.pods.then(
      () => {
        entry.settledMs = opts.nowMs();
      },
      () => {
        if (entries.get(key) === entry) entries.delete(key);
      },
    );
    return entry.pods;
  };
  return {
    podsByRunId: (uuid) => once(`run ${uuid}`, () => inner.podsByRunId(uuid)),
    livePodsByIp: (ip, how = { wait: true }) =>
      once(`ip ${ip} ${how.wait ? 'wait' : 'once'}`, () => inner.livePodsByIp(ip, how)),
  };
}
