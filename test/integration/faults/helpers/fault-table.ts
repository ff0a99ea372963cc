import { appendFile } from 'node:fs/promises';

/**
 * Where the fault tests append their results, one JSON line per scenario. Set by `npm run faults`
 * (test/faults/table.ts), which turns the lines into docs/reliability.md's faults table; unset in a plain
 * `npm test`, where recording is a no-op.
 */
export const FAULTS_OUT_ENV = 'KHRUN_FAULTS_OUT';

export interface FaultRow {
  /** What was done to the system. */
  fault: string;
  /** How many times it was done (runs, kills, reports). */
  runs: number;
  /** What the system did about it, with the measured figures. */
  outcome: string;
  /**
   * Outcomes the checkers reported (genuine reports a checker sent, or a result a checker pod produced by
   * exiting), counted by the test from what it sent or saw, not assumed.
   */
  reported: number;
  /** Of those, how many the khstates hold as recorded outcomes (or stored reports), counted by reading them. */
  recorded: number;
  /** Which scenario wrote it (faultScenario): a later failure line of the same id marks the row failed. */
  id?: string;
  /** Its place among the rows of its area (default: the order rows were written in). */
  rank?: number;
}

/** Written when a scenario's test failed: the row of the same id is marked, or stands in for it if none came. */
export interface FaultFailure {
  id: string;
  /** The scenario's name, for the row that stands in when it failed before it measured anything. */
  scenario: string;
  failed: string;
}

export type FaultLine = FaultRow | FaultFailure;

/** Lost = what checkers reported minus what the khstates hold; the table computes it, no test writes it. */
export function lostOf(row: Pick<FaultRow, 'reported' | 'recorded'>): number {
  return Math.max(0, row.reported - row.recorded);
}

/** Appends one line for the table (with FAULTS_OUT set). */
export async function appendFaultLine(line: FaultLine): Promise<void> {
  const file = process.env[FAULTS_OUT_ENV];
  if (!file) return;
  await appendFile(file, `${JSON.stringify(line)}\n`);
}

/**
 * Appends one row. Scenarios that can lose call it through faultScenario (helpers/fault-scenario.ts), before
 * they assert; a pure test with nothing to lose may call it once it passed.
 */
export function recordFault(row: FaultRow): Promise<void> {
  return appendFaultLine(row);
}

/** Milliseconds as a short human figure for the table. */
export function ms(value: number): string {
  return value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}

/** The q-quantile (0..1) of a list of numbers, nearest-rank. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
