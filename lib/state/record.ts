import { formatMsAsGoDuration } from '../core/duration.ts';
import { toKubeTime } from '../core/kube-time.ts';
import { appendHistoryEntry, DEFAULT_HISTORY_BOUNDS, type HistoryBounds } from './history.ts';
import { type AcceptedReport, type ActiveRun, type KhStateModel, updateKhState } from './khstate.ts';
import type { RunOutcome } from './outcome.ts';
import { OutcomeKind } from './outcome-kind.ts';
import type { KhState } from './resources.ts';
import { addOutcome, emptyTotals } from './totals.ts';
import { addResult } from './uptime.ts';

export { toKubeTime } from '../core/kube-time.ts';

export interface RecordContext {
  nowMs: number;
  runner: string;
  /** The khcheck's runInterval, kept with the totals so staleness can be judged from the khstate alone. */
  runIntervalMs?: number;
  /** The khcheck's timeout, kept beside runIntervalMs: a run is overdue after both have passed. */
  timeoutMs?: number;
  historyBounds?: HistoryBounds;
}

type Counted = Pick<RunOutcome, 'kind' | 'ok' | 'errors' | 'durationMs'>;

/**
 * The model with one more outcome in its history and totals, for the same write that records it: the
 * history of a check can then never disagree with its khstate.
 */
export function withResult(
  model: KhStateModel,
  outcome: Counted,
  ctx: Omit<RecordContext, 'runner'>,
): KhStateModel {
  const firstError = outcome.ok ? undefined : outcome.errors.find((e) => e.trim() !== '');
  return {
    ...model,
    history: appendHistoryEntry(
      model.history,
      {
        atMs: ctx.nowMs,
        kind: outcome.kind,
        ok: outcome.ok,
        durationMs: outcome.durationMs,
        ...(firstError ? { error: firstError } : {}),
      },
      ctx.historyBounds ?? DEFAULT_HISTORY_BOUNDS,
    ),
    totals: addOutcome(model.totals ?? emptyTotals(), {
      kind: outcome.kind,
      durationMs: outcome.durationMs,
      atMs: ctx.nowMs,
      runIntervalMs: ctx.runIntervalMs,
      timeoutMs: ctx.timeoutMs,
    }),
    // A skipped run measured nothing: not counted in the availability.
    uptime:
      outcome.kind === OutcomeKind.Skipped ? model.uptime : addResult(model.uptime, outcome.ok, ctx.nowMs),
  };
}

/** v2's spec fields for a result, and the failure streak that goes with it. */
function withSpecResult(
  model: KhStateModel,
  outcome: RunOutcome,
  at: { lastRunMs: number; runner: string; uuid: string; namespace: string },
): KhStateModel {
  return {
    ...model,
    consecutiveFailures: outcome.ok ? 0 : (model.consecutiveFailures ?? 0) + 1,
    spec: {
      OK: outcome.ok,
      Errors: outcome.ok ? [] : outcome.errors,
      RunDuration: formatMsAsGoDuration(outcome.durationMs),
      Namespace: at.namespace,
      Node: outcome.node,
      LastRun: toKubeTime(at.lastRunMs),
      AuthoritativePod: at.runner,
      uuid: at.uuid,
    },
  };
}

/**
 * The khstate with the run's outcome recorded and the claim released: one write. A skipped run changes no
 * result (the last one stands) but still releases the claim, and is noted in the history.
 */
export function recordOutcome(
  state: KhState,
  run: ActiveRun,
  outcome: RunOutcome,
  ctx: RecordContext,
): KhState {
  return updateKhState(state, (model) => {
    const recorded = withResult(
      {
        ...model,
        run: undefined,
        lastOutcome: {
          uuid: run.uuid,
          kind: outcome.kind,
          startedAtMs: run.startedAtMs,
          finishedAtMs: ctx.nowMs,
          durationMs: outcome.durationMs,
        },
      },
      outcome,
      ctx,
    );
    if (outcome.kind === OutcomeKind.Skipped) return recorded;
    return withSpecResult(recorded, outcome, {
      lastRunMs: outcome.reportedAtMs ?? ctx.nowMs,
      runner: ctx.runner,
      uuid: run.uuid,
      namespace: state.metadata.namespace,
    });
  });
}

/**
 * A khcheck that cannot run (invalid spec) recorded as an execution error without a run: the result, the
 * failure streak, history and totals; an active run and its claim are left as they are.
 */
export function recordWithoutRun(state: KhState, outcome: RunOutcome, ctx: RecordContext): KhState {
  return updateKhState(state, (model) =>
    withSpecResult(withResult(model, outcome, ctx), outcome, {
      lastRunMs: ctx.nowMs,
      runner: ctx.runner,
      uuid: model.spec.uuid,
      namespace: state.metadata.namespace,
    }),
  );
}

/** The khstate carrying a freshly claimed (or adopted, or renewed) run; spec.uuid is set before any pod exists. */
export function claimRun(state: KhState, run: ActiveRun): KhState {
  return updateKhState(state, (m) => ({ ...m, run, spec: { ...m.spec, uuid: run.uuid } }));
}

/** The khstate with a report accepted for the active run: v2's fields at once, the report kept for the runner. */
export function storeReport(state: KhState, report: AcceptedReport, ctx: { server: string }): KhState {
  return updateKhState(state, (m) => ({
    ...m,
    report,
    spec: {
      ...m.spec,
      OK: report.ok,
      Errors: report.errors,
      LastRun: toKubeTime(report.atMs),
      AuthoritativePod: ctx.server,
    },
  }));
}
