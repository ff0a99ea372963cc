import { EXIT } from '../core/exit-codes.ts';
import { escapeControls } from '../core/terminal-text.ts';
import type { KhCheck } from '../state/resources.ts';
import { type StateCache, startStateCache } from '../status/state-cache.ts';
import { formatDocument } from './document.ts';
import {
  listChecks,
  renderStatusTable,
  type StatusCommandOptions,
  type StatusRow,
  statusCells,
  statusColumnWidths,
  statusRows,
} from './status.ts';
import { formatRow } from './table.ts';

/** A check whose row changed, as kubectl's watch events name them. */
export interface StatusChange {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  row: StatusRow;
}

const keyOf = (r: StatusRow) => `${r.namespace}/${r.name}`;

/** What a row shows, ages aside (they change with the clock, not with the check): equal means no line. */
function shown(r: StatusRow, wide: boolean): string {
  const base = [r.hasRun, r.ok, r.lastRunMs, r.durationMs, r.consecutiveFailures, r.firstError, r.orphan];
  return JSON.stringify(wide ? [...base, r.outcome, r.node, r.runningSinceMs] : base);
}

/**
 * The checks whose shown row changed between two views (pure): rows that are gone first, then new and
 * changed ones in the view's order. A write that changes nothing shown (a lease renewal, a report stored
 * before the outcome) is no change; a claimed run is one with -o wide only, which shows it.
 */
export function statusChanges(
  before: ReadonlyMap<string, StatusRow>,
  after: readonly StatusRow[],
  wide: boolean,
): StatusChange[] {
  const afterKeys = new Set(after.map(keyOf));
  const changes: StatusChange[] = [];
  for (const [key, row] of before) if (!afterKeys.has(key)) changes.push({ type: 'DELETED', row });
  for (const row of after) {
    const old = before.get(keyOf(row));
    if (!old) changes.push({ type: 'ADDED', row });
    else if (shown(old, wide) !== shown(row, wide)) changes.push({ type: 'MODIFIED', row });
  }
  return changes;
}

/** A change as a line under the table: its cells in the table's columns, no header (kubectl get -w). */
export function watchTableLine(
  row: StatusRow,
  opts: { nowMs: number; color: boolean; wide: boolean; widths: readonly number[] },
): string {
  return formatRow(statusCells(row, opts), opts.widths);
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A change as one object (-o json|yaml): the event type and the row, times as ISO 8601. */
export function watchEvent(change: StatusChange) {
  const r = change.row;
  return {
    type: change.type,
    check: keyOf(r),
    namespace: r.namespace,
    name: r.name,
    hasRun: r.hasRun,
    ok: r.ok,
    lastRun: iso(r.lastRunMs),
    durationMs: r.durationMs,
    consecutiveFailures: r.consecutiveFailures,
    error: r.firstError,
    outcome: r.outcome,
    node: r.node,
    runningSince: iso(r.runningSinceMs),
    orphan: r.orphan,
  };
}

/** -o json: one change, one line. */
export const watchEventJson = (change: StatusChange) => formatDocument(watchEvent(change), 'json');

/** Resolves true once the cache has listed every scope, false if the signal aborts first. */
function readyOrAborted(cache: StateCache, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (ready: boolean) => {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
      resolve(ready);
    };
    const onAbort = () => finish(false);
    const unsubscribe = cache.subscribe(() => {
      if (cache.ready()) finish(true);
    });
    if (cache.ready()) finish(true);
    else if (signal.aborted) finish(false);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `khrun status -w`: the table (or, with -o json|yaml, one ADDED object per check), then one line per check
 * whose row changed, from a list-and-watch of the khstates (the khchecks are listed once), until the signal
 * aborts (SIGINT): exit 0. The watch owns its cache and closes it in finally.
 */
export async function watchStatus(
  opts: StatusCommandOptions & { signal: AbortSignal; warn: (line: string) => void },
): Promise<number> {
  const checks: KhCheck[] = await listChecks(opts.kc, opts.namespaces);
  const cache = startStateCache({
    kc: opts.kc,
    namespaces: opts.namespaces,
    onInterruption: (reason) => opts.warn(`khrun: ${escapeControls(reason)}`),
  });
  try {
    if (!(await readyOrAborted(cache, opts.signal))) return EXIT.ok;
    const wide = opts.output === 'wide';
    const format = opts.output === 'json' || opts.output === 'yaml' ? opts.output : undefined;
    let rows = statusRows(checks, cache.snapshot());
    const view = { nowMs: opts.nowMs(), color: opts.color, wide };
    const widths = statusColumnWidths(rows, view);
    const print = (change: StatusChange) => {
      if (format === 'json') opts.write(watchEventJson(change));
      else if (format === 'yaml') opts.write(`---\n${formatDocument(watchEvent(change), 'yaml')}`);
      else opts.write(watchTableLine(change.row, { ...view, nowMs: opts.nowMs(), widths }));
    };
    if (format) for (const row of rows) print({ type: 'ADDED', row });
    else opts.write(renderStatusTable(rows, view));
    const unsubscribe = cache.subscribe(() => {
      const next = statusRows(checks, cache.snapshot());
      for (const change of statusChanges(new Map(rows.map((r) => [keyOf(r), r])), next, wide)) print(change);
      rows = next;
    });
    try {
      await new Promise<void>((resolve) => {
        if (opts.signal.aborted) resolve();
        else opts.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      unsubscribe();
    }
    return EXIT.ok;
  } finally {
    await cache.close();
  }
}
