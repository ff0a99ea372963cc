import type { OutcomeKind } from './outcome-kind.ts';

/** How a run ended, as a value: failed checks are data, not exceptions. */
export interface RunOutcome {
  kind: OutcomeKind;
  ok: boolean;
  errors: string[];
  /** Node the checker pod ran on, when known. */
  node: string;
  /** Run start to report (or to the failure being noticed). */
  durationMs: number;
  /** Set when a report was accepted: its time becomes LastRun. */
  reportedAtMs?: number;
  /** Why a run was skipped (no outcome recorded), for logs and --output json. */
  note?: string;
}

/** v2's wording for failures of the run itself, so dashboards and alerts keep matching. */
export function executionError(namespace: string, name: string, reason: string): string {
  return `Check execution error: ${namespace}/${name}: ${reason}`;
}
