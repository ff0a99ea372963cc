import { limiter } from './limit.ts';

/** One cluster's part of a fan-out: its value, or why it has none. */
export type ClusterOutcome<T> =
  | { cluster: string; ok: true; value: T; elapsedMs: number }
  | {
      cluster: string;
      ok: false;
      /** What went wrong, in one line for a person (the error's message, or the deadline). */
      reason: string;
      /** The cluster's deadline passed before its work ended (its requests were aborted). */
      timedOut: boolean;
      error: unknown;
      elapsedMs: number;
    };

/** The cluster's deadline passed: the reason its signal aborts with. */
export class ClusterDeadlineError extends Error {
  override readonly name = 'ClusterDeadlineError';
  constructor(
    readonly cluster: string,
    readonly deadlineMs: number,
  ) {
    super(`no result within ${Math.round(deadlineMs / 100) / 10}s (the cluster's deadline)`);
  }
}

export interface FanOutOptions {
  /** The most clusters worked on at once; the rest wait their turn, in order. */
  concurrency: number;
  /** Each cluster's own time, counted from when its turn starts. */
  deadlineMs: number;
  /** Aborts every cluster's work (a Lambda's remaining time, Ctrl-C). */
  signal?: AbortSignal;
  /** Injected for tests; default performance.now. */
  nowMs?: () => number;
}

/**
 * Runs work once per cluster, at most `concurrency` at once, each with a deadline of its own: the signal
 * work is handed aborts when the cluster's deadline passes (or opts.signal aborts), and the cluster's
 * outcome is then settled at once as timed out, whether or not the work has noticed. One cluster that
 * fails, hangs or throws never holds back another's outcome. Outcomes come back in the order of clusters.
 * The timers are cleared once each cluster is settled.
 */
export async function fanOut<T>(
  clusters: readonly string[],
  work: (cluster: string, signal: AbortSignal) => Promise<T>,
  opts: FanOutOptions,
): Promise<ClusterOutcome<T>[]> {
  const now = opts.nowMs ?? (() => performance.now());
  const limit = limiter(Math.max(1, opts.concurrency));
  return Promise.all(
    clusters.map((cluster) =>
      limit(async (): Promise<ClusterOutcome<T>> => {
        const startMs = now();
        const deadline = new AbortController();
        const timer = setTimeout(
          () => deadline.abort(new ClusterDeadlineError(cluster, opts.deadlineMs)),
          opts.deadlineMs,
        );
        const signal = opts.signal ? AbortSignal.any([deadline.signal, opts.signal]) : deadline.signal;
        let onAbort: (() => void) | undefined;
        const aborted = new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason);
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        });
        try {
          const value = await Promise.race([work(cluster, signal), aborted]);
          return { cluster, ok: true, value, elapsedMs: now() - startMs };
        } catch (error) {
          const timedOut = error instanceof ClusterDeadlineError || deadline.signal.aborted;
          return {
            cluster,
            ok: false,
            reason: reasonOf(timedOut ? (deadline.signal.reason ?? error) : error),
            timedOut,
            error,
            elapsedMs: now() - startMs,
          };
        } finally {
          clearTimeout(timer);
          if (onAbort) signal.removeEventListener('abort', onAbort);
          // The race's loser is settled by nobody: keep its rejection from being reported as unhandled.
          aborted.catch(() => undefined);
        }
      }),
    ),
  );
}

/** An error in one line: its message (no stack), else its text. */
export function reasonOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' ').trim() || (error instanceof Error ? error.name : 'failed');
}
