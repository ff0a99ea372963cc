import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import { healthCheckStatusView } from '../healthcheck/status-view.ts';
import { type HistoryEntry, readHistory } from '../state/history.ts';
import { readActiveRun, readConsecutiveFailures, readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { type CheckAlerts, checkAlerts } from './check-alerts.ts';
import { runDurationSeconds } from './run-duration.ts';
import { checkKey, hasRun, normalizeLastRun } from './status-json.ts';

/** One check as the status page shows it. Not a stable API: the page and this file change together. */
export interface PageCheck {
  /** `namespace/name` for a khcheck; `HealthCheck:namespace/name` for a v3 HealthCheck of the same name. */
  key: string;
  /** Set on a Kuberhealthy v3 HealthCheck only (a khcheck's entry has none). */
  kind?: 'HealthCheck';
  name: string;
  namespace: string;
  /** Same rule as v2's global OK: a check is down iff it has a non-blank error. */
  ok: boolean;
  /** False until a result was recorded (v2 hides such checks; the page shows them as pending). */
  hasRun: boolean;
  errors: string[];
  lastRunMs: number | null;
  durationMs: number | null;
  node: string;
  consecutiveFailures: number;
  /** Kind of the last recorded outcome (Succeeded, Failed, TimedOut, ExecutionError, Skipped). */
  outcome: string | null;
  /** The run in progress, if any. */
  running: { startedAtMs: number; deadlineMs: number } | null;
  history: HistoryEntry[];
  /** Availability, alert, silence and blocking parent (check-alerts.ts). */
  alerts: CheckAlerts;
  /** The cluster it is in, on a page over several (fleet-routes.ts); absent on one cluster's page. */
  cluster?: string;
}

/** A cluster of a page over several: whether it could be read, and why not. */
export interface PageCluster {
  name: string;
  /** Every check of the cluster that ran is OK (false too when the cluster could not be read). */
  ok: boolean;
  /** Why the cluster could not be read; its checks are then absent. */
  error?: string;
}

export interface PageData {
  ok: boolean;
  /** The server's clock when this was built: the page computes ages from it, not from the browser's. */
  nowMs: number;
  currentMaster: string;
  checks: PageCheck[];
  /** On a page over several clusters: each of them, in order; the page groups the checks by cluster. */
  clusters?: PageCluster[];
}

function pageCheck(state: KhState, nowMs: number): PageCheck {
  const spec = state.spec;
  const errors = (Array.isArray(spec?.Errors) ? spec.Errors : []).filter(
    (e) => typeof e === 'string' && e.trim() !== '',
  );
  const lastRun = normalizeLastRun(spec?.LastRun);
  const lastRunMs = lastRun ? Date.parse(lastRun) : Number.NaN;
  const run = hasRun(state);
  const active = readActiveRun(state);
  return {
    key: checkKey(state),
    name: state.metadata.name,
    namespace: state.metadata.namespace,
    ok: errors.length === 0,
    hasRun: run,
    errors,
    lastRunMs: run && Number.isFinite(lastRunMs) ? lastRunMs : null,
    durationMs: run ? Math.round(runDurationSeconds(spec?.RunDuration ?? '') * 1000) : null,
    node: spec?.Node ?? '',
    consecutiveFailures: readConsecutiveFailures(state),
    outcome: readLastOutcome(state)?.kind ?? null,
    running: active ? { startedAtMs: active.startedAtMs, deadlineMs: active.deadlineMs } : null,
    history: readHistory(state),
    alerts: checkAlerts(state, nowMs),
  };
}

/**
 * A HealthCheck as the page shows it: its result from its status as v3 writes it, khrun's history and
 * consecutive failures from its annotations (the khstate view of it, as `khrun status` reads it).
 */
function pageHealthCheck(hc: HealthCheck, nowMs: number): PageCheck {
  const v = healthCheckStatusView(hc);
  const view = stateViewOf(hc);
  const errors = v.errors.filter((e) => e.trim() !== '');
  const active = v.running ? readActiveRun(view) : undefined;
  return {
    key: `HealthCheck:${v.namespace}/${v.name}`,
    kind: 'HealthCheck',
    name: v.name,
    namespace: v.namespace,
    ok: v.ok && errors.length === 0,
    hasRun: v.hasRun,
    errors,
    lastRunMs: v.hasRun && v.lastRunMs > 0 ? v.lastRunMs : null,
    durationMs: v.hasRun ? Math.round(v.runDurationMs) : null,
    node: view.spec?.Node ?? '',
    consecutiveFailures: readConsecutiveFailures(view),
    outcome: readLastOutcome(view)?.kind ?? null,
    running: active ? { startedAtMs: active.startedAtMs, deadlineMs: active.deadlineMs } : null,
    history: readHistory(view),
    alerts: checkAlerts(view, nowMs),
  };
}

/** By namespace/name, a khcheck before a HealthCheck of the same name. */
const order = (c: PageCheck) => `${c.namespace}/${c.name}\u0000${c.kind ? 1 : 0}`;

/** The page's view of the khstates and HealthChecks: failing checks first, then by namespace/name. */
export function buildPageData(
  states: readonly KhState[],
  opts: {
    namespaces?: readonly string[];
    currentMaster: string;
    nowMs: number;
    healthChecks?: readonly HealthCheck[];
  },
): PageData {
  const wanted = opts.namespaces?.length ? new Set(opts.namespaces) : undefined;
  const checks = [
    ...states
      .filter((s) => !wanted || wanted.has(s.spec?.Namespace ?? s.metadata.namespace))
      .map((s) => pageCheck(s, opts.nowMs)),
    // A HealthCheck is filtered by its own namespace, as the status JSON and v3's /json do.
    ...(opts.healthChecks ?? [])
      .filter((hc) => !wanted || wanted.has(hc.metadata.namespace))
      .map((hc) => pageHealthCheck(hc, opts.nowMs)),
  ].sort((a, b) => {
    const down = Number(a.hasRun && !a.ok) - Number(b.hasRun && !b.ok);
    if (down !== 0) return -down;
    return order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0;
  });
  return {
    ok: checks.every((c) => !c.hasRun || c.ok),
    nowMs: opts.nowMs,
    currentMaster: opts.currentMaster,
    checks,
  };
}
