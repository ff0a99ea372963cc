import { EXIT } from '../core/exit-codes.ts';
import { escapeControls } from '../core/terminal-text.ts';
import type { KhCheck } from '../state/resources.ts';
import { startHealthCheckCache } from '../status/healthcheck-cache.ts';
import { type ObjectCache, startStateCache } from '../status/state-cache.ts';
import { formatDocument } from './document.ts';
import {
  healthCheckRows,
  listChecks,
  mergeRows,
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

/** A row's identity (a khcheck's as before v3; a HealthCheck of the same name is another check). */
export const watchRowKey = (r: StatusRow) => `${r.kind ? `${r.kind}:` : ''}${r.namespace}/${r.name}`;
const keyOf = watchRowKey;

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

/**
 * A change as a line under the table: its cells in the table's columns, no header (kubectl get -w); kinds
 * when the table has the KIND column.
 */
export function watchTableLine(
  row: StatusRow,
  opts: { nowMs: number; color: boolean; wide: boolean; widths: readonly number[]; kinds?: boolean },
): string {
  return formatRow(statusCells(row, opts), opts.widths);
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A change as one object (-o json|yaml): the event type and the row, times as ISO 8601. */
export function watchEvent(change: StatusChange) {
  const r = change.row;
  return {
    type: change.type,
    ...(r.kind ? { kind: r.kind } : {}),
    check: `${r.namespace}/${r.name}`,
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
function readyOrAborted(
  cache: Pick<ObjectCache<unknown>, 'ready' | 'subscribe'>,
  signal: AbortSignal,
): Promise<boolean> {
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
 * whose row changed, from a list-and-watch of the khstates and one of the HealthChecks (the khchecks are
 * listed once), until the signal aborts (SIGINT): exit 0. The watch owns its caches and closes them in finally.
 */
export async function watchStatus(
  opts: StatusCommandOptions & { signal: AbortSignal; warn: (line: string) => void },
): Promise<number> {
  const checks: KhCheck[] = await listChecks(opts.client, opts.namespaces);
  const cacheOptions = {
    client: opts.client,
    namespaces: opts.namespaces,
    onInterruption: (reason: string) => opts.warn(`khrun: ${escapeControls(reason)}`),
  };
  const states = startStateCache(cacheOptions);
  const healthChecks = startHealthCheckCache(cacheOptions);
  const both = {
    ready: () => states.ready() && healthChecks.ready(),
    subscribe: (listener: () => void) => {
      const off = [states.subscribe(listener), healthChecks.subscribe(listener)];
      return () => {
        for (const unsubscribe of off) unsubscribe();
      };
    },
  };
  const currentRows = () =>
    mergeRows(statusRows(checks, states.snapshot()), healthCheckRows(healthChecks.snapshot()));
  try {
    if (!(await readyOrAborted(both, opts.signal))) return EXIT.ok;
    const wide = opts.output === 'wide';
    const format = opts.output === 'json' || opts.output === 'yaml' ? opts.output : undefined;
    let rows = currentRows();
    const view = { nowMs: opts.nowMs(), color: opts.color, wide };
    const widths = statusColumnWidths(rows, view);
    // Lines keep the table's columns: KIND only when the first table had HealthChecks.
    const kinds = rows.some((r) => r.kind);
    const print = (change: StatusChange) => {
      if (format === 'json') opts.write(watchEventJson(change));
      else if (format === 'yaml') opts.write(`---\n${formatDocument(watchEvent(change), 'yaml')}`);
      else opts.write(watchTableLine(change.row, { ...view, nowMs: opts.nowMs(), widths, kinds }));
    };
    if (format) for (const row of rows) print({ type: 'ADDED', row });
    else opts.write(renderStatusTable(rows, view));
    const unsubscribe = both.subscribe(() => {
      const next = currentRows();
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
    await Promise.all([states.close(), healthChecks.close()]);
  }
}
