import { shortId } from '../core/ids.ts';
import { done, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type ActiveRun, OutcomeKind, readAcceptedReport } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { claimRun, recordOutcome } from '../state/record.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
import { holdingOf } from '../state/run-holder.ts';
import type { AcquireDeps } from './acquire.ts';
import { announceOutcome } from './announce.ts';

/**
 * A report that landed after the outcome was decided (for instance during the late-report grace) wins over
 * "exited without reporting": the check did report.
 */
export function reconcileWithReport(outcome: RunOutcome, state: KhState, run: ActiveRun): RunOutcome {
  const report = readAcceptedReport(state);
  if (!report || report.uuid !== run.uuid || outcome.reportedAtMs !== undefined) return outcome;
  return {
    kind: report.ok ? OutcomeKind.Succeeded : OutcomeKind.Failed,
    ok: report.ok,
    errors: report.errors,
    node: outcome.node,
    durationMs: Math.max(0, report.atMs - run.startedAtMs),
    reportedAtMs: report.atMs,
  };
}

/**
 * Records the outcome and releases the claim in one compare-and-swap write, re-reading and deciding again
 * on conflict. Fenced: only while the run is still held by this invocation (run.holder); returns undefined
 * when it is not (another invocation closed it, or adopted it and will record it itself).
 */
export async function finishRun(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  outcome: RunOutcome,
  opts: { runner: string; maxAttempts: number },
): Promise<RunOutcome | undefined> {
  const recorded = await updateKhStateWithRetry<{ final: RunOutcome; atMs: number } | undefined>(
    deps.kube,
    check,
    {
      writer: 'record',
      maxAttempts: opts.maxAttempts,
      log: deps.log,
      decide: (current) => {
        const holding = holdingOf(current, run);
        if (holding.kind !== 'held') return done(undefined);
        const { state } = holding;
        const final = reconcileWithReport(outcome, state, run);
        const atMs = deps.clock.nowMs();
        const ctx = { nowMs: atMs, runner: opts.runner, runIntervalMs: check.runIntervalMs };
        return write(recordOutcome(state, run, final, ctx), () => ({ final, atMs }));
      },
    },
  );
  if (!recorded) return undefined;
  const { final, atMs } = recorded;
  deps.log.info('outcome recorded', {
    run: shortId(run.uuid),
    outcome: final.kind,
    ok: final.ok,
    durationMs: final.durationMs,
    ...(final.ok ? {} : { error: final.errors[0] }),
  });
  await announceOutcome(deps, check, { runUuid: run.uuid, outcome: final, atMs, runner: opts.runner });
  return final;
}

/**
 * Lets go of a run without an outcome (lease ends now), so the next invocation adopts it at once. Fenced
 * like finishRun: a run another invocation holds is left alone. Best effort: if it keeps conflicting, the
 * lease simply runs out.
 */
export async function releaseRun(deps: AcquireDeps, check: ValidCheck, run: ActiveRun, maxAttempts: number) {
  try {
    await updateKhStateWithRetry<void>(deps.kube, check, {
      writer: 'release',
      maxAttempts,
      log: deps.log,
      decide: (current) => {
        const holding = holdingOf(current, run);
        if (holding.kind !== 'held') return done(undefined);
        const released = { ...holding.active, leaseUntilMs: deps.clock.nowMs() };
        return write(claimRun(holding.state, released), () => undefined);
      },
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
  }
}
