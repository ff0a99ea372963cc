import type { Log } from '../core/log.ts';
import { updateKhStateWithRetry, write } from '../kube/cas.ts';
import { newKhState, OutcomeKind, readActiveRun } from '../state/khstate.ts';
import { executionError, type RunOutcome } from '../state/outcome.ts';
import { recordWithoutRun } from '../state/record.ts';
import type { KhCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire.ts';
import { announceOutcome } from './announce.ts';

/**
 * A khcheck whose spec cannot run (a bad duration, no container...) is recorded as an execution error in
 * its khstate, in one compare-and-swap write, and announced; no run is claimed and no pod created.
 */
export async function recordInvalidCheck(
  deps: AcquireDeps,
  source: KhCheck,
  reason: string,
  opts: { runner: string; maxAttempts: number },
): Promise<RunOutcome> {
  const { namespace, name } = source.metadata;
  const outcome: RunOutcome = {
    kind: OutcomeKind.ExecutionError,
    ok: false,
    errors: [executionError(namespace, name, reason)],
    node: '',
    durationMs: 0,
  };
  const recorded = await updateKhStateWithRetry(deps.kube, source.metadata, {
    writer: 'invalid-check',
    maxAttempts: opts.maxAttempts,
    log: deps.log,
    decide: (state) => {
      const atMs = deps.clock.nowMs();
      const next = recordWithoutRun(state ?? newKhState(name, namespace), outcome, {
        nowMs: atMs,
        runner: opts.runner,
      });
      return write(next, () => ({ atMs, live: Boolean(readActiveRun(state)) }));
    },
  });
  logInvalid(deps.log, reason, recorded.live);
  await announceOutcome(
    deps,
    { namespace, name, uid: source.metadata.uid },
    { runUuid: '', outcome, atMs: recorded.atMs, runner: opts.runner },
  );
  return outcome;
}

function logInvalid(log: Log, reason: string, live: boolean) {
  log.warn('invalid khcheck recorded as an execution error', { reason, live });
}
