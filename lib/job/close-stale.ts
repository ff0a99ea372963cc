import { shortId } from '../core/ids.ts';
import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type ClosedRun, closeStaleRun } from '../run/acquire.ts';
import type { AcquireDeps } from '../run/acquire-deps.ts';
import { announceOutcome } from '../run/announce.ts';
import { removePodsByUid } from '../run/remove-pod.ts';
import { readActiveRun } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { recordOutcome } from '../state/record.ts';
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
      closed = await closeStaleRun(deps, check, state, run, nowMs);
      const next = recordOutcome(state, run, closed.outcome, { nowMs, runner: opts.runner });
      return write(next, () => closed?.outcome);
    },
  });
  if (!closed || !outcome) return undefined;
  await removePodsByUid(deps, check.namespace, closed.pods);
  deps.log.info('closed stale khjob run', { run: shortId(closed.run.uuid), outcome: outcome.kind });
  await announceOutcome(deps, check, {
    runUuid: closed.run.uuid,
    outcome,
    atMs: closed.atMs,
    runner: opts.runner,
  });
  return outcome;
}
