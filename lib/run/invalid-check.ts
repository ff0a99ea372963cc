import { shortId } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type ActiveRun, newKhState } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { executionErrorOutcome } from '../state/outcomes.ts';
import { recordOutcome, recordWithoutRun } from '../state/record.ts';
import type { KhCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import { announceOutcome } from './announce.ts';
import { decideClaim } from './claim.ts';
import { removeRunPods } from './remove-pod.ts';

/**
 * A khcheck whose spec cannot run (a bad duration, no container...) is recorded as an execution error in
 * its khstate, in one compare-and-swap write, and announced; no run is claimed and no pod created. A run
 * of it that nobody holds any more (its runner died: lease lapsed or deadline passed) is closed by that
 * same write with the validation error as its outcome, and its pods are removed once the write landed; a
 * run whose runner is alive is left to that runner.
 */
export async function recordInvalidCheck(
  deps: AcquireDeps,
  source: KhCheck,
  reason: string,
  opts: { runner: string; maxAttempts: number },
): Promise<RunOutcome> {
  const { namespace, name } = source.metadata;
  const outcome = executionErrorOutcome({ namespace, name }, reason, { node: '', durationMs: 0 });
  const recorded = await updateKhStateWithRetry<InvalidRecorded>(deps.kube, source.metadata, {
    writer: 'invalid-check',
    maxAttempts: opts.maxAttempts,
    log: deps.log,
    decide: (state) => {
      const atMs = deps.clock.nowMs();
      const ctx = { nowMs: atMs, runner: opts.runner };
      const decision = decideClaim(state, atMs);
      const base = state ?? newKhState(name, namespace);
      if (decision.kind === 'adopt' || decision.kind === 'close-stale') {
        const closed = decision.run;
        const durationMs = Math.max(0, Math.min(atMs, closed.deadlineMs) - closed.startedAtMs);
        const next = recordOutcome(base, closed, { ...outcome, durationMs }, ctx);
        return write(next, () => ({ atMs, live: false, closed }));
      }
      const live = decision.kind === 'busy';
      return write(recordWithoutRun(base, outcome, ctx), () => ({ atMs, live, closed: undefined }));
    },
  });
  if (recorded.closed) await removeRunPods(deps, { namespace, name }, recorded.closed.uuid);
  logInvalid(deps.log, reason, recorded);
  await announceOutcome(
    deps,
    { namespace, name, uid: source.metadata.uid },
    { runUuid: recorded.closed?.uuid ?? '', outcome, atMs: recorded.atMs, runner: opts.runner },
  );
  return outcome;
}

interface InvalidRecorded {
  atMs: number;
  /** A run whose runner is alive was left to it. */
  live: boolean;
  /** The orphaned run this write closed. */
  closed: ActiveRun | undefined;
}

function logInvalid(log: Log, reason: string, recorded: InvalidRecorded) {
  log.warn('invalid khcheck recorded as an execution error', {
    reason,
    live: recorded.live,
    ...(recorded.closed ? { closedRun: shortId(recorded.closed.uuid) } : {}),
  });
}
