import { EXIT } from '../core/exit-codes.ts';
import type { RunResult } from '../kinds/kind.ts';
import { type BatchEntry, entryLabel } from './batch-entry.ts';

/**
 * What became of one check of a batch: its iteration's result, or why it has none. A missing khcheck and a
 * runner failure (an API error, a conflict storm past its bound, a bug) are values here, so that one check's
 * fault is its own entry and never the batch's.
 */
export type CheckOutcome =
  | { kind: 'ran'; result: RunResult }
  | { kind: 'not-found'; reason: string }
  | { kind: 'failed'; error: string }
  /** Queued behind the concurrency bound when the invocation was stopped: never claimed, nothing to adopt. */
  | { kind: 'not-started'; reason: string };

export interface BatchCheckResult {
  check: BatchEntry;
  outcome: CheckOutcome;
}

/** How a single run's result maps to an exit code and a JSON object (lib/commands/exit-codes.ts). */
export interface RunResultMapping {
  exitCode: (result: RunResult) => number;
  json: (result: RunResult, ref: BatchEntry) => object;
}

/**
 * One check's exit code, as `khrun run --check` would exit for it alone: a missing khcheck is a usage error
 * (2), a runner failure or a check never started is 1, a run's result maps as a single run's.
 */
export function checkExitCode(outcome: CheckOutcome, map: RunResultMapping): number {
  switch (outcome.kind) {
    case 'ran':
      return map.exitCode(outcome.result);
    case 'not-found':
      return EXIT.usage;
    case 'failed':
    case 'not-started':
      return EXIT.runnerError;
  }
}

/**
 * The batch's exit code: 0 when every check's would be 0 (recorded, busy, superseded, check deleted), else
 * 1 when any check's runner could not finish (the run is left for the next invocation to adopt), else 2 (a
 * check refused to a Kuberhealthy, or missing). 1 comes first: it is the one an operator must look at, and
 * no Job retries a batch either way (the tick's Jobs have backoffLimit 0).
 */
export function batchExitCode(results: readonly BatchCheckResult[], map: RunResultMapping): number {
  const codes = results.map((r) => checkExitCode(r.outcome, map));
  if (codes.includes(EXIT.runnerError)) return EXIT.runnerError;
  return codes.includes(EXIT.usage) ? EXIT.usage : EXIT.ok;
}

/** One check's entry as `--output json` prints it: a single run's object, or not-found/failed/not-started. */
export function checkResultJson(r: BatchCheckResult, map: RunResultMapping): object {
  const check = entryLabel(r.check);
  switch (r.outcome.kind) {
    case 'ran':
      return map.json(r.outcome.result, r.check);
    case 'not-found':
    case 'not-started':
      return { check, result: r.outcome.kind, reason: r.outcome.reason };
    case 'failed':
      return { check, result: 'failed', error: r.outcome.error };
  }
}

/** How many checks ended in each result, for the batch's summary log line. */
export function batchTally(results: readonly BatchCheckResult[]): Record<string, number> {
  const tally: Record<string, number> = {};
  for (const r of results) {
    const key = r.outcome.kind === 'ran' ? r.outcome.result.kind : r.outcome.kind;
    tally[key] = (tally[key] ?? 0) + 1;
  }
  return tally;
}
