import { EXIT } from '../core/exit-codes.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { oneLine, truncateChars } from '../core/text.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import { healthCheckStatusView } from '../healthcheck/status-view.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import { readActiveRun, readConsecutiveFailures, readLastOutcome } from '../state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck, type KhState } from '../state/resources.ts';
import { listHealthChecks } from '../status/healthcheck-cache.ts';
import { runDurationSeconds } from '../status/run-duration.ts';
import { listKhStates } from '../status/state-cache.ts';
import { buildStatus, goJson, hasRun, normalizeLastRun } from '../status/status-json.ts';
import { formatDocument } from './document.ts';
import { alertsCell, holdOfRow, type RowAlerts, rowAlertsOf, uptimeCell } from './status-alerts.ts';
import { columnWidths, formatTable, humanDuration, paint, shortDuration } from './table.ts';

export type StatusOutput = 'table' | 'wide' | 'json' | 'yaml';

/** One line of `khrun status`: a khcheck joined with its khstate (either may be missing). */
export interface StatusRow {
  name: string;
  namespace: string;
  hasRun: boolean;
  ok: boolean;
  lastRunMs: number | null;
  durationMs: number | null;
  consecutiveFailures: number;
  firstError: string;
  outcome: string;
  node: string;
  /** Start of the run in progress (epoch ms), if one is. */
  runningSinceMs: number | null;
  /** A khstate without a khcheck (v2's reaper would delete it). */
  orphan: boolean;
  /** Set on a Kuberhealthy v3 HealthCheck's row only (a khcheck's row has none). */
  kind?: 'HealthCheck';
  /** Silence, uptime and alert (status-alerts.ts); the cells are made when printed. */
  alerts?: RowAlerts;
}

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

export function statusRows(checks: readonly KhCheck[], states: readonly KhState[]): StatusRow[] {
  const byKey = new Map(states.map((s) => [keyOf(s.metadata.namespace, s.metadata.name), s]));
  const keys = new Set([...checks.map((c) => keyOf(c.metadata.namespace, c.metadata.name)), ...byKey.keys()]);
  const byCheck = new Map(checks.map((c) => [keyOf(c.metadata.namespace, c.metadata.name), c]));
  const checkKeys = new Set(byCheck.keys());
  return [...keys].sort().map((key) => {
    const [namespace = '', name = ''] = key.split('/');
    const state = byKey.get(key);
    const ran = state ? hasRun(state) : false;
    const errors = (state?.spec?.Errors ?? []).filter((e) => typeof e === 'string' && e.trim() !== '');
    const lastRun = normalizeLastRun(state?.spec?.LastRun);
    return {
      name,
      namespace,
      hasRun: ran,
      ok: errors.length === 0,
      lastRunMs: ran && lastRun ? Date.parse(lastRun) : null,
      durationMs: ran ? Math.round(runDurationSeconds(state?.spec?.RunDuration ?? '') * 1000) : null,
      consecutiveFailures: state ? readConsecutiveFailures(state) : 0,
      firstError: errors[0] ?? '',
      outcome: (state && readLastOutcome(state)?.kind) ?? '',
      node: state?.spec?.Node ?? '',
      runningSinceMs: (state && readActiveRun(state)?.startedAtMs) ?? null,
      orphan: !checkKeys.has(key),
      alerts: rowAlertsOf(byCheck.get(key), state),
    };
  });
}

/**
 * One row per HealthCheck, read from its status as v3 writes it (khrun's run history and consecutive
 * failures from its annotations on the HealthCheck); a never-run one shows as never run, like a khcheck.
 */
export function healthCheckRows(hcs: readonly HealthCheck[]): StatusRow[] {
  return hcs.map((hc) => {
    const v = healthCheckStatusView(hc);
    const view = stateViewOf(hc);
    const errors = v.errors.filter((e) => e.trim() !== '');
    return {
      name: v.name,
      namespace: v.namespace,
      hasRun: v.hasRun,
      ok: v.ok && errors.length === 0,
      lastRunMs: v.hasRun && v.lastRunMs > 0 ? v.lastRunMs : null,
      durationMs: v.hasRun ? Math.round(v.runDurationMs) : null,
      consecutiveFailures: readConsecutiveFailures(view),
      firstError: errors[0] ?? '',
      outcome: readLastOutcome(view)?.kind ?? '',
      node: '',
      runningSinceMs: v.running ? v.lastRunMs : null,
      orphan: false,
      kind: 'HealthCheck',
      alerts: rowAlertsOf(hc, view),
    };
  });
}

/** Rows of both kinds in one order: by namespace, then name, then kind (khchecks first). */
export function mergeRows(khchecks: readonly StatusRow[], healthChecks: readonly StatusRow[]): StatusRow[] {
  const key = (r: StatusRow) => `${r.namespace}/${r.name}/${r.kind ? 1 : 0}`;
  return [...khchecks, ...healthChecks].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/**
 * The columns of `khrun status` (-o wide adds outcome, node and a run in progress). KIND leads only when
 * HealthChecks are listed, so a khcheck-only cluster's table (which scripts read) has no KIND column.
 */
export function statusHeader(wide: boolean, kinds = false): string[] {
  const header = ['CHECK', 'NAMESPACE', 'OK', 'LAST RUN', 'DURATION', 'FAILURES'];
  if (kinds) header.unshift('KIND');
  if (wide) header.push('OUTCOME', 'NODE', 'RUNNING', 'UPTIME(24H/7D/30D)', 'ALERTS');
  header.push('ERROR');
  return header;
}

/**
 * One check's cells, ages relative to nowMs; colored when color is true. Strings read from the cluster
 * are shown with their control characters escaped (core/terminal-text.ts).
 */
export function statusCells(
  r: StatusRow,
  opts: { nowMs: number; color: boolean; wide: boolean; kinds?: boolean },
): string[] {
  const ok = !r.hasRun
    ? paint('-', 'dim', opts.color)
    : paint(String(r.ok), r.ok ? 'green' : 'red', opts.color);
  // A silenced check is marked by its name, as an orphan is: the columns scripts read stay as they are.
  const held = !opts.wide && holdOfRow(r.alerts, opts.nowMs) ? ' (silenced)' : '';
  const cells = [
    safe(r.orphan ? `${r.name} (no khcheck)` : `${r.name}${held}`),
    safe(r.namespace),
    ok,
    r.lastRunMs === null ? '<never>' : humanDuration(opts.nowMs - r.lastRunMs),
    r.durationMs === null ? '-' : shortDuration(r.durationMs),
    paint(String(r.consecutiveFailures), r.consecutiveFailures > 0 ? 'red' : undefined, opts.color),
  ];
  if (opts.kinds) cells.unshift(r.kind ?? 'khcheck');
  if (opts.wide) {
    cells.push(
      safe(r.outcome || '-'),
      safe(r.node || '-'),
      r.runningSinceMs === null ? '-' : `for ${humanDuration(opts.nowMs - r.runningSinceMs)}`,
      uptimeCell(r.alerts, opts.nowMs),
      safe(alertsCell(r.alerts, opts.nowMs)),
    );
  }
  const error = safe(oneLine(r.firstError));
  cells.push(paint(opts.wide ? error : truncateChars(error, 80), 'red', opts.color));
  return cells;
}

/** The table `khrun status` prints: plain when color is false (piped), colored on a terminal. */
export function renderStatusTable(
  rows: readonly StatusRow[],
  opts: { nowMs: number; color: boolean; wide: boolean },
): string {
  if (rows.length === 0) return 'No checks found.';
  const kinds = rows.some((r) => r.kind);
  const header = statusHeader(opts.wide, kinds).map((h) => paint(h, 'bold', opts.color));
  return formatTable([header, ...rows.map((r) => statusCells(r, { ...opts, kinds }))]);
}

/** The column widths of the table renderStatusTable prints, for lines printed under it later (-w). */
export function statusColumnWidths(
  rows: readonly StatusRow[],
  opts: { nowMs: number; wide: boolean },
): number[] {
  const kinds = rows.some((r) => r.kind);
  const plain = { ...opts, color: false, kinds };
  return columnWidths([statusHeader(opts.wide, kinds), ...rows.map((r) => statusCells(r, plain))]);
}

export interface StatusCommandOptions {
  client: KubeClient;
  /** Only these namespaces; empty: all. */
  namespaces: string[];
  output: StatusOutput;
  color: boolean;
  /** Name shown as v2's CurrentMaster in -o json. */
  currentMaster: string;
  nowMs: () => number;
  write: (text: string) => void;
}

/** The khchecks in scope; an API server that asks to back off (429 while its storage settles) is retried. */
export async function listChecks(client: KubeClient, namespaces: readonly string[]): Promise<KhCheck[]> {
  const custom = client.custom;
  const co = { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL };
  const lists = await retryTransient(() =>
    namespaces.length
      ? Promise.all(namespaces.map((namespace) => custom.listNamespacedCustomObject({ ...co, namespace })))
      : Promise.all([custom.listClusterCustomObject(co)]),
  );
  return lists.flatMap((list) => (list as { items: KhCheck[] }).items);
}

/**
 * `khrun status`: one list of khchecks and khstates, printed as a table or v2's status document (json,
 * yaml). `khrun status -w` is status-watch.ts.
 */
export async function statusCommand(opts: StatusCommandOptions): Promise<number> {
  const [checks, states, healthChecks] = await Promise.all([
    listChecks(opts.client, opts.namespaces),
    retryTransient(() => listKhStates(opts.client, opts.namespaces)),
    retryTransient(() => listHealthChecks(opts.client, opts.namespaces)),
  ]);
  if (opts.output === 'json' || opts.output === 'yaml') {
    const status = buildStatus(states, {
      currentMaster: opts.currentMaster,
      namespaces: opts.namespaces,
      healthChecks,
      khrunDetailsAtMs: opts.nowMs(),
    });
    opts.write(opts.output === 'json' ? goJson(status) : formatDocument(status, 'yaml'));
    return EXIT.ok;
  }
  opts.write(
    renderStatusTable(mergeRows(statusRows(checks, states), healthCheckRows(healthChecks)), {
      nowMs: opts.nowMs(),
      color: opts.color,
      wide: opts.output === 'wide',
    }),
  );
  return EXIT.ok;
}
