import { DEFAULT_DUE_TIMINGS, type DueDecision, type DueTimings } from '../schedule/due.ts';
import { readActiveRun, readDispatchClaim } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { decideJobStep } from './decide.ts';
import { jobRunUuid, type KhJob } from './khjob.ts';

/**
 * Whether a khjob needs an invocation now, from the khjob and its khstate alone (pure); undefined when it
 * never will again (it ran, or something other than khrun runs it), so the tick does not list it.
 *
 * - A new khjob is due at once (v2 runs one as soon as it is applied; there is no interval to spread).
 * - Its live run is left alone; a dispatch not yet followed by the run's start is pending for
 *   dispatchTtlMs, after which the khjob is due again (the runner Job never started).
 * - Its run whose runner let go is due at once: the dispatched runner adopts it, or, past the deadline,
 *   records its end without starting another.
 * - A dispatch claim older than the khjob belongs to an earlier khjob of the same name and is ignored.
 */
export function decideJobDue(
  job: KhJob,
  state: KhState | null,
  nowMs: number,
  timings: DueTimings = DEFAULT_DUE_TIMINGS,
): DueDecision | undefined {
  const step = decideJobStep(job, state, nowMs);
  if (step.kind === 'ran' || step.kind === 'foreign') return undefined;
  const run = readActiveRun(state);
  const ours = run?.uuid === jobRunUuid(job) ? run : undefined;
  if (ours && nowMs < ours.deadlineMs && nowMs < ours.leaseUntilMs)
    return { due: false, reason: 'running', nextCheckMs: ours.leaseUntilMs };
  const createdAtMs = Date.parse(String(job.metadata.creationTimestamp ?? '')) || 0;
  const dispatch = readDispatchClaim(state);
  const pending =
    dispatch &&
    dispatch.atMs >= createdAtMs &&
    (!ours || dispatch.atMs > ours.startedAtMs) &&
    nowMs < dispatch.atMs + timings.dispatchTtlMs;
  if (pending)
    return { due: false, reason: 'dispatched', nextCheckMs: dispatch.atMs + timings.dispatchTtlMs };
  if (ours) return { due: true, reason: step.kind === 'close-stale' ? 'close-stale' : 'adopt-abandoned' };
  return { due: true, reason: 'never-run' };
}
