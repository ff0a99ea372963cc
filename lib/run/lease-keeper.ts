import type { Log } from '../core/log.ts';
import type { CancelScheduled, Scheduler } from '../core/scheduler.ts';
import { loggableError, WriteConflict } from '../kube/errors.ts';

export interface LeaseKeeperOptions {
  leaseMs: number;
  /**
   * Extends the lease once. 'lost': the run is no longer this runner's, so there is nothing left to keep.
   * Throws when the renewal failed (a write conflict, an unreachable API server): the keeper retries.
   */
  renew: () => Promise<'renewed' | 'lost'>;
  scheduler: Scheduler;
  log: Log;
  /** Stops the keeper: no renewal starts once it aborted. */
  signal: AbortSignal;
  /** The first retry's delay after a failed renewal, doubled per failure in a row. Default 100 ms. */
  retryInitialMs?: number;
  /** The cap on retry delays, itself capped at the renewal interval. Default 5 s. */
  retryMaxMs?: number;
}

/** Renewals are never closer together than this, however short the lease. */
export const MIN_RENEW_INTERVAL_MS = 200;

/**
 * Keeps a run's lease alive while its runner waits: renews every half lease, so one failed renewal still
 * leaves half a lease to retry in. A failed renewal is logged (a write conflict at debug, anything else as a
 * warning) and retried at once with a capped doubling back-off (100, 200, 400 … ms), then the half-lease
 * rhythm resumes: a live runner never lets its lease lapse without saying so, and a runner that died stops
 * renewing, so the next invocation adopts the run.
 *
 * Resolves once the keeper stopped: the signal aborted (or renew() said 'lost') and no renewal is in
 * flight, so the caller that awaits it knows no write of the keeper's lands afterwards.
 */
export function startLeaseKeeper(opts: LeaseKeeperOptions): Promise<void> {
  const { signal, scheduler, log } = opts;
  const intervalMs = Math.max(MIN_RENEW_INTERVAL_MS, opts.leaseMs / 2);
  const retryMaxMs = Math.min(opts.retryMaxMs ?? 5_000, intervalMs);
  const retryDelayMs = (failures: number) =>
    Math.min(retryMaxMs, (opts.retryInitialMs ?? 100) * 2 ** (failures - 1));

  return new Promise<void>((resolve) => {
    let cancelNext: CancelScheduled = () => {};
    let renewing = false;
    let failures = 0;
    const stop = () => {
      cancelNext();
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = () => {
      if (!renewing) stop();
    };
    /** One renewal; returns when the next is due, or undefined when there is nothing left to keep. */
    const renewOnce = async (): Promise<number | undefined> => {
      try {
        if ((await opts.renew()) === 'lost') return undefined;
        failures = 0;
        return intervalMs;
      } catch (error) {
        failures += 1;
        const retryInMs = retryDelayMs(failures);
        // A conflict is routine (a report landed between the read and the write); anything else is news.
        if (error instanceof WriteConflict)
          log.debug('lease renewal conflicted; retrying', { failures, retryInMs });
        else log.warn('lease renewal failed; retrying', { error: loggableError(error), failures, retryInMs });
        return retryInMs;
      }
    };
    const renewAndReschedule = async () => {
      renewing = true;
      const nextInMs = await renewOnce();
      renewing = false;
      if (nextInMs === undefined || signal.aborted) stop();
      else cancelNext = scheduler.schedule(() => void renewAndReschedule(), nextInMs);
    };

    if (signal.aborted) {
      resolve();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    cancelNext = scheduler.schedule(() => void renewAndReschedule(), intervalMs);
  });
}
