/** Cancels a scheduled callback; calling it after the callback ran, or twice, does nothing. */
export type CancelScheduled = () => void;

/**
 * When deferred work runs. Injected so that the drivers that wait (the run's wait, the lease keeper) are
 * tested by running callbacks when the test says and asserting the delays they asked for, instead of
 * sleeping or faking the global timers.
 */
export interface Scheduler {
  schedule(callback: () => void, delayMs: number): CancelScheduled;
}

/** The largest delay setTimeout honours; a longer one fires at once (Node clamps it to 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The scheduler over setTimeout. Delays above MAX_TIMER_MS (~24.8 days) are capped, so such a callback runs
 * early, never at once: callers re-check the time when called, as every level-based caller does anyway.
 */
export const timerScheduler: Scheduler = {
  schedule(callback, delayMs) {
    const timer = setTimeout(callback, Math.min(MAX_TIMER_MS, Math.max(0, delayMs)));
    return () => clearTimeout(timer);
  },
};
