import { parseGoDuration } from '../core/duration.ts';
import { DEFAULT_DUE_TIMINGS, type DueDecision, type DueTimings } from '../schedule/due.ts';
import { readActiveRun, readDispatchClaim } from '../state/khstate.ts';
import { HC_DEFAULT_RUN_INTERVAL, type HealthCheck } from './resources.ts';
import { stateViewOf } from './state-view.ts';
import { readHealthCheckStatus } from './status-view.ts';
import { validateHealthCheck } from './validate.ts';

/** The runInterval a HealthCheck is scheduled with: v3's, else its default (an invalid one still gets runs,
 * so its runner records why in its status). */
function runIntervalMsOf(hc: HealthCheck): number {
  const valid = validateHealthCheck(hc);
  if (valid.ok) return valid.check.runIntervalMs;
  const parsed = parseGoDuration(HC_DEFAULT_RUN_INTERVAL);
  return parsed.ok ? parsed.ns / 1e6 : 600_000;
}

/**
 * Whether a HealthCheck is due for a runner invocation, as Kuberhealthy v3.0.0 decides it: no run in
 * progress (status.currentUUID empty) and now − status.lastRunUnix ≥ spec.runInterval, a never-run check at
 * once. nowMs is the API server's time (lastRunUnix was written by other machines). Before that rule, as
 * for a khcheck: a live run is left alone, a run whose runner let go is due at once (adopt, or close after
 * its deadline), and a dispatch not yet followed by a run is pending for dispatchTtlMs. Pure.
 */
export function decideHealthCheckDue(
  hc: HealthCheck,
  nowMs: number,
  timings: DueTimings = DEFAULT_DUE_TIMINGS,
): DueDecision {
  const view = stateViewOf(hc);
  const run = readActiveRun(view);
  if (run && nowMs < run.deadlineMs && nowMs < run.leaseUntilMs)
    return { due: false, reason: 'running', nextCheckMs: run.leaseUntilMs };
  const lastRunMs = readHealthCheckStatus(hc).lastRunUnix * 1000;
  const dispatch = readDispatchClaim(view);
  const startedMs = Math.max(lastRunMs, run?.startedAtMs ?? 0);
  if (
    dispatch &&
    Math.floor(dispatch.atMs / 1000) * 1000 > startedMs &&
    nowMs < dispatch.atMs + timings.dispatchTtlMs
  )
    return { due: false, reason: 'dispatched', nextCheckMs: dispatch.atMs + timings.dispatchTtlMs };
  if (run) return { due: true, reason: nowMs >= run.deadlineMs ? 'close-stale' : 'adopt-abandoned' };
  if (lastRunMs === 0) return { due: true, reason: 'never-run' };
  const dueMs = lastRunMs + runIntervalMsOf(hc);
  return nowMs >= dueMs
    ? { due: true, reason: 'interval-passed' }
    : { due: false, reason: 'not-yet', nextCheckMs: dueMs };
}
