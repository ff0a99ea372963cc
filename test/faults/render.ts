import {
  type FaultFailure,
  type FaultLine,
  type FaultRow,
  lostOf,
} from '../integration/faults/helpers/fault-table.ts';

/** The areas in the order the table lists them; a row's area is the start of its fault text. */
export const AREA_ORDER = [
  'overlap',
  'crash',
  'exit',
  'control plane',
  'clock',
  'fencing',
  'adoption',
  'conflicts',
  'hostile report',
  'flood',
  'load',
  'boundary',
  'fuzz',
];

/** A row of the table: a measured row (failed: its test failed after), or a scenario that failed before it measured. */
export type TableRow =
  | (FaultRow & { failed?: string })
  | { fault: string; failed: string; runs?: undefined; outcome?: undefined };

const isFailure = (line: FaultLine): line is FaultFailure => 'failed' in line && !('outcome' in line);

/**
 * The rows the scenarios appended (KHRUN_FAULTS_OUT, one JSON line each), with their failures merged in: a
 * failure line marks the row of its id, or stands in for it when the scenario failed before it recorded one.
 * Ordered by area (AREA_ORDER), then rank, then the order they were written in.
 */
export function faultRows(text: string): TableRow[] {
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as FaultLine);
  const rows: TableRow[] = [];
  const byId = new Map<string, FaultRow & { failed?: string }>();
  for (const line of lines) {
    if (isFailure(line)) continue;
    const row = { ...line };
    rows.push(row);
    if (row.id) byId.set(row.id, row);
  }
  for (const line of lines.filter(isFailure)) {
    const row = byId.get(line.id);
    if (row) row.failed = line.failed;
    else rows.push({ fault: line.scenario, failed: line.failed });
  }
  const rank = (row: TableRow) => {
    const area = AREA_ORDER.findIndex((a) => row.fault.startsWith(a));
    return area === -1 ? AREA_ORDER.length : area;
  };
  return rows
    .map((row, index) => ({ row, index }))
    .sort(
      (a, b) =>
        rank(a.row) - rank(b.row) ||
        ((a.row as FaultRow).rank ?? 0) - ((b.row as FaultRow).rank ?? 0) ||
        a.index - b.index,
    )
    .map((r) => r.row);
}

const cell = (text: string | number) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ');

/**
 * The markdown table: lost is computed here (reported − recorded), never written by a test; a failed
 * scenario's row says FAILED and why, and one that measured nothing shows ? for its counts.
 */
export function renderFaultTable(rows: TableRow[]): string[] {
  return [
    '| fault | runs | outcome | reported | recorded | lost |',
    '|---|---:|---|---:|---:|---:|',
    ...rows.map((r) => {
      const failed = r.failed ? `**FAILED: ${r.failed}**` : '';
      if (r.outcome === undefined)
        return `| ${cell(r.fault)} | ? | ${cell(`${failed} (before it measured anything)`)} | ? | ? | ? |`;
      const outcome = failed ? `${failed}; ${r.outcome}` : r.outcome;
      const lost = lostOf(r);
      return `| ${cell(r.fault)} | ${r.runs} | ${cell(outcome)} | ${r.reported} | ${r.recorded} | ${lost ? `**${lost}**` : lost} |`;
    }),
  ];
}
