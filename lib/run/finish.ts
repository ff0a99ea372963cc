import { shortId } from '../core/ids.ts';
import { WriteConflict } from '../kube/errors.ts';
import { type ActiveRun, OutcomeKind, readAcceptedReport, readActiveRun } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { claimRun, recordOutcome } from '../state/record.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
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
 * on conflict. Returns undefined when the run is no longer ours (another invocation closed it).
 */
export async function finishRun(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  outcome: RunOutcome,
  opts: { runner: string; maxAttempts: number },
): Promise<RunOutcome | undefined> {
  for (let attempt = 1; attempt <= opts.maxAttempts; attempt++) {
    const state = await deps.kube.readState(check.namespace, check.name);
    if (!state || readActiveRun(state)?.uuid !== run.uuid) return undefined;
    const final = reconcileWithReport(outcome, state, run);
    const nowMs = deps.clock.nowMs();
    try {
      await deps.kube.replaceState(
        recordOutcome(state, run, final, {
          nowMs,
          runner: opts.runner,
          runIntervalMs: check.runIntervalMs,
        }),
      );
      deps.log.info('outcome recorded', {
        run: shortId(run.uuid),
        outcome: final.kind,
        ok: final.ok,
        durationMs: final.durationMs,
        ...(final.ok ? {} : { error: final.errors[0] }),
      });
      await announceOutcome(deps, check, {
        runUuid: run.uuid,
        outcome: final,
        atMs: nowMs,
        runner: opts.runner,
      });
      return final;
    } catch (error) {
      if (!(error instanceof WriteConflict)) throw error;
    }
  }
  throw new Error(
    `could not record the outcome of ${check.namespace}/${check.name}: ${opts.maxAttempts} write conflicts in a row`,
  );
}

/** Lets go of a run without an outcome (lease ends now), so the next invocation adopts it at once. */
export async function releaseRun(deps: AcquireDeps, check: ValidCheck, run: ActiveRun, maxAttempts: number) {
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const state = await deps.kube.readState(check.namespace, check.name);
    const active = readActiveRun(state);
    if (!state || active?.uuid !== run.uuid) return;
    try {
      await deps.kube.replaceState(claimRun(state, { ...active, leaseUntilMs: deps.clock.nowMs() }));
      return;
    } catch (error) {
      if (!(error instanceof WriteConflict)) throw error;
    }
  }
}
