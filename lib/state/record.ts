import { formatMsAsGoDuration } from '../core/duration.ts';
import { appendHistory, DEFAULT_HISTORY_BOUNDS, HISTORY_ANNOTATION, type HistoryBounds } from './history.ts';
import {
  type ActiveRun,
  ANNOTATION,
  type LastOutcome,
  nextKhState,
  OutcomeKind,
  readConsecutiveFailures,
} from './khstate.ts';
import type { RunOutcome } from './outcome.ts';
import type { KhState } from './resources.ts';
import { addOutcome, readTotals, TOTALS_ANNOTATION } from './totals.ts';

/** RFC 3339 at second precision, as Go writes metav1.Time, so v2 readers parse it unchanged. */
export function toKubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export interface RecordContext {
  nowMs: number;
  runner: string;
  /** The khcheck's runInterval, kept with the totals so staleness can be judged from the khstate alone. */
  runIntervalMs?: number;
  historyBounds?: HistoryBounds;
}

/**
 * The history and totals annotations with one more outcome, for the same write that records it: the
 * history of a check can then never disagree with its khstate.
 */
export function resultAnnotations(
  state: KhState,
  outcome: Pick<RunOutcome, 'kind' | 'ok' | 'errors' | 'durationMs'>,
  ctx: Omit<RecordContext, 'runner'>,
): Record<string, string> {
  const annotations = state.metadata.annotations ?? {};
  const firstError = outcome.ok ? undefined : outcome.errors.find((e) => e.trim() !== '');
  return {
    [HISTORY_ANNOTATION]: appendHistory(
      annotations[HISTORY_ANNOTATION],
      {
        atMs: ctx.nowMs,
        kind: outcome.kind,
        ok: outcome.ok,
        durationMs: outcome.durationMs,
        ...(firstError ? { error: firstError } : {}),
      },
      ctx.historyBounds ?? DEFAULT_HISTORY_BOUNDS,
    ),
    [TOTALS_ANNOTATION]: JSON.stringify(
      addOutcome(readTotals(state), {
        kind: outcome.kind,
        durationMs: outcome.durationMs,
        atMs: ctx.nowMs,
        runIntervalMs: ctx.runIntervalMs,
      }),
    ),
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
  const last: LastOutcome = {
    uuid: run.uuid,
    kind: outcome.kind,
    startedAtMs: run.startedAtMs,
    finishedAtMs: ctx.nowMs,
    durationMs: outcome.durationMs,
  };
  const annotations: Record<string, string | undefined> = {
    [ANNOTATION.run]: undefined,
    [ANNOTATION.outcome]: JSON.stringify(last),
    ...resultAnnotations(state, outcome, ctx),
  };
  if (outcome.kind === OutcomeKind.Skipped) return nextKhState(state, {}, annotations);
  const failures = outcome.ok ? 0 : readConsecutiveFailures(state) + 1;
  annotations[ANNOTATION.consecutiveFailures] = String(failures);
  return nextKhState(
    state,
    {
      OK: outcome.ok,
      Errors: outcome.ok ? [] : outcome.errors,
      RunDuration: formatMsAsGoDuration(outcome.durationMs),
      Namespace: state.metadata.namespace,
      Node: outcome.node,
      LastRun: toKubeTime(outcome.reportedAtMs ?? ctx.nowMs),
      AuthoritativePod: ctx.runner,
      uuid: run.uuid,
    },
    annotations,
  );
}

/** The khstate carrying a freshly claimed (or adopted) run; spec.uuid is set before any pod exists. */
export function claimRun(state: KhState, run: ActiveRun): KhState {
  return nextKhState(state, { uuid: run.uuid }, { [ANNOTATION.run]: JSON.stringify(run) });
}
