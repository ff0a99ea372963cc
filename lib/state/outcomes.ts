import type { AcceptedReport } from './khstate.ts';
import { executionError, type RunOutcome } from './outcome.ts';
import { OutcomeKind } from './outcome-kind.ts';

/** The check an outcome's error messages name (v2's `namespace/name` prefix). */
export interface OutcomeCheck {
  namespace: string;
  name: string;
}

/** Where and for how long the run ran, as the outcome records it. */
export interface OutcomeAt {
  /** Node the checker pod ran on, '' when unknown. */
  node: string;
  durationMs: number;
}

/**
 * The outcome a report decides: Succeeded or Failed with the report's errors, lasting from the run's start
 * to the report (never negative), with the report's time as LastRun.
 */
export function reportedOutcome(
  report: Pick<AcceptedReport, 'ok' | 'errors' | 'atMs'>,
  run: { startedAtMs: number },
  node: string,
): RunOutcome {
  return {
    kind: report.ok ? OutcomeKind.Succeeded : OutcomeKind.Failed,
    ok: report.ok,
    errors: report.errors,
    node,
    durationMs: Math.max(0, report.atMs - run.startedAtMs),
    reportedAtMs: report.atMs,
  };
}

/** No report by the run's deadline; `detail` says what the pod was doing (v2's wording around it). */
export function timedOutOutcome(check: OutcomeCheck, detail: string, at: OutcomeAt): RunOutcome {
  return failure(
    OutcomeKind.TimedOut,
    check,
    `timed out waiting for checker pod to report in (${detail})`,
    at,
  );
}

/** The checker pod ended (`exit` describes how) and no report came within the late-report grace. */
export function exitedWithoutReportOutcome(check: OutcomeCheck, exit: string, at: OutcomeAt): RunOutcome {
  return executionErrorOutcome(check, exit, at);
}

/** The run itself failed (the pod cannot start or be created, the khcheck is invalid): v2's execution error. */
export function executionErrorOutcome(check: OutcomeCheck, reason: string, at: OutcomeAt): RunOutcome {
  return failure(OutcomeKind.ExecutionError, check, reason, at);
}

/** Nothing to record (the pod was deleted by someone else before it reported): the last result stands. */
export function skippedOutcome(note: string, at: OutcomeAt): RunOutcome {
  return { kind: OutcomeKind.Skipped, ok: true, errors: [], node: at.node, durationMs: at.durationMs, note };
}

function failure(kind: OutcomeKind, check: OutcomeCheck, reason: string, at: OutcomeAt): RunOutcome {
  return {
    kind,
    ok: false,
    errors: [executionError(check.namespace, check.name, reason)],
    node: at.node,
    durationMs: at.durationMs,
  };
}
