import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type ClosedRun, closeStale, settleClosedRun } from '../run/acquire.ts';
import type { AcquireDeps } from '../run/acquire-deps.ts';
import { readActiveRun } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import type { ValidCheck } from '../state/resources.ts';

/**
 * Ends a khjob's run whose runner died and whose deadline passed, as the engine ends a khcheck's stale run
 * (its accepted report if one came, else a timeout), but without claiming a new run: a khjob runs once.
 * One compare-and-swap write; the run's pods are removed only after it landed. Returns the outcome
 * recorded, or undefined when the run was no longer stale (recorded or taken meanwhile).
 */
export async function closeStaleJobRun(
  deps: AcquireDeps,
  check: ValidCheck,
  opts: { runUuid: string; runner: string; maxAttempts: number },
): Promise<RunOutcome | undefined> {
  let closed: ClosedRun | undefined;
  const outcome = await updateKhStateWithRetry<RunOutcome | undefined>(deps.kube, check, {
    writer: 'record',
    maxAttempts: opts.maxAttempts,
    log: deps.log,
    decide: async (state) => {
      closed = undefined;
      const run = readActiveRun(state);
      const nowMs = deps.clock.nowMs();
      if (!state || run?.uuid !== opts.runUuid || nowMs < run.deadlineMs) return done(undefined);
      const stale = await closeStale(deps, check, state, run, { nowMs, runner: opts.runner });
      closed = stale.closed;
      return write(stale.next, () => stale.closed.outcome);
    },
  });
  if (!closed || !outcome) return undefined;
  await settleClosedRun(deps, check, closed, { runner: opts.runner, message: 'closed stale khjob run' });
  return outcome;
}
