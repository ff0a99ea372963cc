import { shortId } from '../core/ids.ts';
import { done, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { RecordedOutcome } from '../notify/run-notifier.ts';
import { type AcceptedReport, type ActiveRun, readAcceptedReport } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { reportedOutcome } from '../state/outcomes.ts';
import { claimRun, recordOutcome, storeReport } from '../state/record.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
import { type Holding, holdingOf } from '../state/run-holder.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import { announceOutcome } from './announce.ts';

/**
 * A report that landed after the outcome was decided (for instance during the late-report grace) wins over
 * "exited without reporting": the check did report.
 */
export function reconcileWithReport(outcome: RunOutcome, state: KhState, run: ActiveRun): RunOutcome {
  const report = readAcceptedReport(state);
  if (!report || report.uuid !== run.uuid || outcome.reportedAtMs !== undefined) return outcome;
  return reportedOutcome(report, run, outcome.node);
}

export type WrittenOutcome =
  /** state: the khstate as written (absent when the write's answer was lost and it was found landed). */
  | { kind: 'recorded'; outcome: RunOutcome; atMs: number; state?: KhState }
  | { kind: 'superseded'; holding: Exclude<Holding, { kind: 'held' }> };

export interface FinishOptions {
  runner: string;
  maxAttempts: number;
  /** The khstate as last written or seen: the write goes on it without a GET, and reads only on a 409. */
  held?: KhState;
  /**
   * The report the outcome comes from, when it reached this process's endpoint: kept in the same write,
   * so the khstate reads as if the endpoint had stored it first (`khrun describe` shows it).
   */
  report?: AcceptedReport;
}

/**
 * Records the outcome and releases the claim in one compare-and-swap write, re-reading and deciding again
 * on conflict. Fenced: only while the run is still held by this invocation (run.holder); 'superseded' when it is
 * not (another invocation closed it, or adopted it and will record it itself). Announces nothing.
 */
export function writeOutcome(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  outcome: RunOutcome,
  opts: FinishOptions,
): Promise<WrittenOutcome> {
  return updateKhStateWithRetry<WrittenOutcome>(deps.kube, check, {
    writer: 'record',
    maxAttempts: opts.maxAttempts,
    log: deps.log,
    initial: opts.held,
    decide: async (current) => {
      const holding = holdingOf(current, run);
      if (holding.kind !== 'held') return done({ kind: 'superseded', holding });
      const state = opts.report
        ? storeReport(holding.state, opts.report, { server: opts.runner })
        : holding.state;
      const final = reconcileWithReport(outcome, state, run);
      const atMs = deps.clock.nowMs();
      const ctx = {
        nowMs: atMs,
        runner: opts.runner,
        runIntervalMs: check.runIntervalMs,
        timeoutMs: check.timeoutMs,
      };
      const recorded = recordOutcome(state, run, final, ctx);
      const next = deps.notify
        ? await deps.notify.decide(recorded, notified(check, run, final, atMs, opts.runner))
        : recorded;
      return write(next, (written) => ({ kind: 'recorded', outcome: final, atMs, state: written }));
    },
  });
}

/** What the engine tells notifications of an outcome it wrote (lib/notify/run-notifier.ts). */
export function notified(
  check: ValidCheck,
  run: ActiveRun,
  outcome: RunOutcome,
  atMs: number,
  runner: string,
): RecordedOutcome {
  return {
    check: check.source,
    runIntervalMs: check.runIntervalMs,
    outcome,
    runUuid: run.uuid,
    atMs,
    holder: run.holder ?? runner,
  };
}

/**
 * After an outcome write landed: the notifications it queued for this invocation are delivered (phase
 * 'notifying' first, the fault suite's failpoint) and marked done. Best effort: never throws.
 */
export async function notifyRecorded(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  written: { outcome: RunOutcome; atMs: number; state?: KhState },
  opts: { runner: string; onPhase?: (phase: string) => void },
): Promise<void> {
  if (!deps.notify || !written.state) return;
  const o = notified(check, run, written.outcome, written.atMs, opts.runner);
  if (deps.notify.pending(written.state, o)) opts.onPhase?.('notifying');
  await deps.notify.afterWrite(written.state, o);
}

/**
 * writeOutcome, then announceRecorded and the notifications the write queued, side by side; undefined
 * when the run was no longer this invocation's.
 */
export async function finishRun(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  outcome: RunOutcome,
  opts: FinishOptions & { onPhase?: (phase: string) => void },
): Promise<RunOutcome | undefined> {
  const written = await writeOutcome(deps, check, run, outcome, opts);
  if (written.kind !== 'recorded') return undefined;
  await Promise.all([
    announceRecorded(deps, check, run, written, opts.runner),
    notifyRecorded(deps, check, run, written, opts),
  ]);
  return written.outcome;
}

/** Logs a recorded outcome and emits its Event (best effort: the khstate is the truth). */
export async function announceRecorded(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  recorded: { outcome: RunOutcome; atMs: number },
  runner: string,
): Promise<void> {
  const { outcome: final, atMs } = recorded;
  deps.log.info('outcome recorded', {
    run: shortId(run.uuid),
    outcome: final.kind,
    ok: final.ok,
    durationMs: final.durationMs,
    ...(final.ok ? {} : { error: final.errors[0] }),
  });
  await announceOutcome(deps, check, { runUuid: run.uuid, outcome: final, atMs, runner });
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
