// When each run of a check was due by its actor's own schedule (pure): the start of the "end to end from
// the schedule" figure of the kuberhealthy section. A run's due time is when its schedule made it due and
// the run before it had its outcome: a run cannot start before that under any of the three.

/**
 * Kuberhealthy v2.7.1's schedule (cmd/kuberhealthy/kuberhealthy.go, runCheck): a time.Ticker of the
 * interval made right before the first run, which starts at once; after each run the loop receives from the
 * ticker. A tick that fired while a run was going is delivered at the receive, later ones are dropped
 * (Go's slow-receiver rule), and ticks stay on the grid T0 + m·interval. So run k ≥ 1 was released by the
 * first tick after run k−1's release.
 *
 * releasesMs: each run's release (the first request of its iteration), releasesMs[0] being T0. Returns
 * each run's due time: max(that tick, the previous run's outcome); run 0's is T0; undefined where a
 * release or the previous outcome is unknown.
 */
export function v2DueTimes(
  releasesMs: ReadonlyArray<number | undefined>,
  outcomesMs: ReadonlyArray<number | undefined>,
  intervalMs: number,
): Array<number | undefined> {
  const t0 = releasesMs[0];
  return releasesMs.map((_, k) => {
    if (t0 === undefined) return undefined;
    if (k === 0) return t0;
    const previous = releasesMs[k - 1];
    const previousOutcome = outcomesMs[k - 1];
    if (previous === undefined || previousOutcome === undefined) return undefined;
    const tick = t0 + (Math.floor((previous - t0) / intervalMs) + 1) * intervalMs;
    return Math.max(tick, previousOutcome);
  });
}

/**
 * Kuberhealthy v3.0.0's schedule (internal/kuberhealthy/kuberhealthy.go, the schedule loop): a check is due
 * when no run is in flight (status.currentUUID empty) and interval has passed since status.lastRunUnix, in
 * whole seconds as it compares them. Run k ≥ 1 was due at run k−1's lastRunUnix·1000 + interval, or at run
 * k−1's outcome if that came later. Run 0 (the controller's first look) has no due time here.
 */
export function v3DueTimes(
  lastRunUnix: ReadonlyArray<number | undefined>,
  outcomesMs: ReadonlyArray<number | undefined>,
  intervalMs: number,
): Array<number | undefined> {
  return lastRunUnix.map((_, k) => {
    if (k === 0) return undefined;
    const start = lastRunUnix[k - 1];
    const previousOutcome = outcomesMs[k - 1];
    if (start === undefined || !start || previousOutcome === undefined) return undefined;
    return Math.max(start * 1000 + intervalMs, previousOutcome);
  });
}

/**
 * khrun's schedule in this section: the runner Job a CronJob would create, created by the benchmark on the
 * check's interval (a fire skipped while the last Job is still active, as concurrencyPolicy Forbid does).
 * Each run's due time is the last fire at or before its start was seen: the Job that started it.
 */
export function khrunDueTimes(
  firesMs: readonly number[],
  startsSeenMs: readonly number[],
): Array<number | undefined> {
  const fires = [...firesMs].sort((a, b) => a - b);
  return startsSeenMs.map((start) => fires.findLast((f) => f <= start));
}
