import { parseGoDuration } from '../core/duration.ts';
import { shortId } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { RecordedOutcome } from '../notify/run-notifier.ts';
import { type ActiveRun, newKhState } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { executionErrorOutcome } from '../state/outcomes.ts';
import { recordOutcome, recordWithoutRun } from '../state/record.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
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
  // The invocation that delivers the notification this write may queue.
  const holder = `${opts.runner}/${deps.ids.runUuid()}`;
  const recorded = await updateKhStateWithRetry<InvalidRecorded>(deps.kube, source.metadata, {
    writer: 'invalid-check',
    maxAttempts: opts.maxAttempts,
    log: deps.log,
    decide: async (state) => {
      const atMs = deps.clock.nowMs();
      const ctx = { nowMs: atMs, runner: opts.runner };
      const decision = decideClaim(state, atMs);
      const base = state ?? newKhState(name, namespace);
      const notice = (runUuid: string) => ({
        check: source,
        runIntervalMs: intervalOf(source),
        outcome,
        runUuid,
        atMs,
        holder,
      });
      const notify = async (recorded: KhState, runUuid: string) =>
        deps.notify ? deps.notify.decide(recorded, notice(runUuid)) : recorded;
      if (decision.kind === 'adopt' || decision.kind === 'close-stale') {
        const closed = decision.run;
        const durationMs = Math.max(0, Math.min(atMs, closed.deadlineMs) - closed.startedAtMs);
        const next = await notify(recordOutcome(base, closed, { ...outcome, durationMs }, ctx), closed.uuid);
        return write(next, (written) => ({
          atMs,
          live: false,
          closed,
          written,
          notice: notice(closed.uuid),
        }));
      }
      const live = decision.kind === 'busy';
      const runUuid = deps.ids.runUuid();
      const next = await notify(recordWithoutRun(base, outcome, ctx), runUuid);
      return write(next, (written) => ({ atMs, live, closed: undefined, written, notice: notice(runUuid) }));
    },
  });
  await deps.notify?.afterWrite(recorded.written, recorded.notice);
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
  written: KhState;
  notice: RecordedOutcome;
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

/** The khcheck's runInterval when it parses (an invalid check's may not): a firing alert's renewal window. */
function intervalOf(source: KhCheck): number {
  const d = parseGoDuration(String(source.spec?.runInterval ?? ''));
  return d.ok && d.ns > 0 ? d.ns / 1e6 : 600_000;
}
