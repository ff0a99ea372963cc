/**
 * How long finished runner Jobs (and with them their pods and the runner's log) stay before the Job
 * controller collects them: the check's run interval, kept within these bounds.
 * - No longer than the interval: a check then has at most its last run's finished Job (plus the one
 *   running), whatever its interval; 1,000 checks keep about 1,000 finished Jobs and pods, not the ~6,000
 *   an hour's TTL keeps at a 10-minute interval.
 * - At least 2 minutes: time to read a failed runner's log (`kubectl logs job/...`) after the status has
 *   shown the failure, even for a check that runs every minute (about two finished Jobs each).
 * - At most 10 minutes: a check that runs hourly or daily needs its runner's log no longer than a frequent
 *   one; what outlives the Job is in the khstate (the outcome, its errors) and in the last checker pods.
 */
export interface FinishedJobTtl {
  minSeconds: number;
  maxSeconds: number;
}

export const DEFAULT_FINISHED_JOB_TTL: FinishedJobTtl = { minSeconds: 120, maxSeconds: 600 };

/**
 * ttlSecondsAfterFinished for a run of a check with this interval; a run without one (a khjob runs once)
 * keeps its Job the longest.
 */
export function finishedJobTtlSeconds(runIntervalMs: number | undefined, bounds: FinishedJobTtl): number {
  if (runIntervalMs === undefined || !Number.isFinite(runIntervalMs)) return bounds.maxSeconds;
  const intervalSeconds = Math.ceil(runIntervalMs / 1000);
  return Math.min(bounds.maxSeconds, Math.max(bounds.minSeconds, intervalSeconds));
}
