/**
 * Whether a cluster's API server answers now, asked at most once per freshMs however many requests want to
 * know (concurrent callers share one probe). A server's status caches keep their last snapshot while
 * their watches retry, so without this a cluster whose API server is gone would go on showing its checks
 * as they were; with it, it is shown as unreachable, with the reason, until it answers again.
 */
export interface ClusterProbe {
  /** Resolves when the last probe (at most freshMs old) succeeded; rejects with its error otherwise. */
  check(): Promise<void>;
}

export function clusterProbe(
  ping: (signal: AbortSignal) => Promise<unknown>,
  opts: { freshMs: number; timeoutMs: number; nowMs?: () => number },
): ClusterProbe {
  const now = opts.nowMs ?? (() => performance.now());
  let last: { atMs: number; result: Promise<void> } | undefined;
  return {
    check() {
      if (last && now() - last.atMs < opts.freshMs) return last.result;
      const result = ping(AbortSignal.timeout(opts.timeoutMs)).then(() => undefined);
      // Observed here, so a probe nobody awaits any more is never an unhandled rejection.
      result.catch(() => undefined);
      last = { atMs: now(), result };
      return result;
    },
  };
}
