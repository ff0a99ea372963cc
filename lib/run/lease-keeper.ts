import { Backoff } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { CancelScheduled, Scheduler } from '../core/scheduler.ts';
import { loggableError, WriteConflict } from '../kube/errors.ts';

export interface LeaseKeeperOptions {
  leaseMs: number;
  /**
   * Extends the lease once. 'superseded': the run is no longer this runner's, so there is nothing left to keep.
   * Throws when the renewal failed (a write conflict, an unreachable API server): the keeper retries.
   */
  renew: () => Promise<'renewed' | 'superseded'>;
  scheduler: Scheduler;
  /** The time leases are written in (the renewals' clock), to tell when the lease lapsed. */
  clock: Clock;
  /** When the lease held at the start runs out (the claim's or adoption's leaseUntilMs). */
  heldUntilMs: number;
  /**
   * The run's deadline: a lease is never written past it (leaseUntil), so once the lease held reaches it
   * there is nothing left to renew, and a check shorter than the lease is never renewed at all.
   */
  deadlineMs?: number;
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
 * What a renewal leaves of the lease it renews, at most: enough for the keeper's retries (100 ms doubling to
 * 5 s) to outlast an API server's bad minute. A lease of up to twice this is renewed at its half.
 */
export const RENEW_MARGIN_MS = 60_000;

/**
 * How often a lease of leaseMs is renewed: when a minute of it is left (RENEW_MARGIN_MS), or at its half
 * when that is sooner. Each renewal is one etcd write, and a runner of a fleet waits minutes for a loaded
 * node: at the default 150 s, a renewal every 90 s.
 */
export function renewIntervalMs(leaseMs: number): number {
  return Math.max(MIN_RENEW_INTERVAL_MS, leaseMs - Math.min(leaseMs / 2, RENEW_MARGIN_MS));
}

/**
 * Keeps a run's lease alive while its runner waits: renews when a minute of it is left, or at its half
 * when that is sooner (renewIntervalMs), so a failed renewal leaves that long to retry in. A failed
 * renewal is logged (a write conflict at debug, anything else as a warning) and retried at once with a
 * capped doubling back-off (100, 200, 400 … ms), then the rhythm resumes. A live runner never lets its
 * lease lapse without saying so: the first failure past the lease's end warns that another invocation may
 * adopt the run, and the renewal that follows re-checks ownership in its own compare-and-swap (renewLease),
 * so it either warns that the run is still ours after a lapse or says 'superseded' and the runner steps
 * down. A runner that died stops renewing, so the next invocation adopts the run.
 *
 * Resolves once the keeper stopped: the signal aborted (or renew() said 'superseded') and no renewal is in
 * flight, so the caller that awaits it knows no write of the keeper's lands afterwards.
 */
export function startLeaseKeeper(opts: LeaseKeeperOptions): Promise<void> {
  const { signal, scheduler, log } = opts;
  const deadlineMs = opts.deadlineMs ?? Number.POSITIVE_INFINITY;
  const intervalMs = renewIntervalMs(opts.leaseMs);
  const retryMaxMs = Math.min(opts.retryMaxMs ?? 5_000, intervalMs);
  const retries = new Backoff({
    initialMs: Math.min(opts.retryInitialMs ?? 100, retryMaxMs),
    maxMs: retryMaxMs,
  });

  return new Promise<void>((resolve) => {
    let cancelNext: CancelScheduled = () => {};
    let renewing = false;
    let failures = 0;
    let heldUntilMs = opts.heldUntilMs;
    let lapseAnnounced = false;
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
      const startedMs = opts.clock.nowMs();
      try {
        const renewal = await opts.renew();
        const lapsedForMs = opts.clock.nowMs() - heldUntilMs;
        if (renewal === 'superseded') {
          if (lapsedForMs > 0)
            log.warn('lease lapsed and the run is no longer ours: stepping down', { lapsedForMs });
          return undefined;
        }
        if (lapsedForMs > 0)
          log.warn('lease lapsed before it was renewed; ownership re-checked: the run is still ours', {
            lapsedForMs,
            failures,
          });
        heldUntilMs = Math.min(startedMs + opts.leaseMs, deadlineMs);
        lapseAnnounced = false;
        failures = 0;
        retries.reset();
        return heldUntilMs >= deadlineMs ? undefined : intervalMs;
      } catch (error) {
        failures += 1;
        const retryInMs = retries.next();
        // A conflict is routine (a report landed between the read and the write); anything else is news.
        if (error instanceof WriteConflict)
          log.debug('lease renewal conflicted; retrying', { failures, retryInMs });
        else log.warn('lease renewal failed; retrying', { error: loggableError(error), failures, retryInMs });
        const expiredForMs = opts.clock.nowMs() - heldUntilMs;
        if (expiredForMs >= 0 && !lapseAnnounced) {
          lapseAnnounced = true;
          log.warn('lease expired while renewals fail: another invocation may adopt the run', {
            expiredForMs,
            failures,
          });
        }
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

    if (signal.aborted || heldUntilMs >= deadlineMs) {
      resolve();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    cancelNext = scheduler.schedule(() => void renewAndReschedule(), intervalMs);
  });
}
