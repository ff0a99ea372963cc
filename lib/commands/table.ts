/** Terminal output helpers for the kubectl-like commands: aligned columns, optional color, human ages. */

const CODES = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;
export type Tone = keyof typeof CODES;

/** Color only for a terminal: piped output stays plain text that scripts and diffs can read. */
export function paint(text: string, tone: Tone | undefined, color: boolean): string {
  if (!color || !tone || text === '') return text;
  return `\u001b[${CODES[tone]}m${text}\u001b[0m`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape sequences paint() writes
const ANSI = /\u001b\[[0-9;]*m/g;

/** The text without color codes. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** Columns the text takes on a terminal (escape sequences take none; one per code point otherwise). */
export function visibleWidth(text: string): number {
  return Array.from(stripAnsi(text)).length;
}

/** The width of each column: its widest cell, by visible width. */
export function columnWidths(rows: readonly (readonly string[])[]): number[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell));
  }
  return widths;
}

/** One row in columns of at least these widths, three spaces apart; the last column is not padded. */
export function formatRow(row: readonly string[], widths: readonly number[]): string {
  return row
    .map((cell, i) =>
      i === row.length - 1 ? cell : cell + ' '.repeat(Math.max(0, (widths[i] ?? 0) - visibleWidth(cell))),
    )
    .join('   ')
    .trimEnd();
}

/** Rows as columns separated by three spaces, like kubectl's printer; the last column is not padded. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = columnWidths(rows);
  return rows.map((row) => formatRow(row, widths)).join('\n');
}

/** kubectl's age format (apimachinery's HumanDuration): 45s, 5m3s, 65m, 3h5m, 26h, 3d5h, 300d, 2y30d. */
export function humanDuration(ms: number): string {
  // Go's int(d.Seconds()) truncates toward zero; up to 2 s in the future is clock skew, shown as 0s.
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${hours / 24}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 8)
    return days % 365 === 0 ? `${days / 365}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  return `${Math.floor(days / 365)}y`;
}

/** A run time for people: 850ms, 1.5s, 2m5s, 1h2m. */
export function shortDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10}s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${seconds % 60 ? `${seconds % 60}s` : ''}`;
  return `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
}
