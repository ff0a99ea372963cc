import type { Clock } from '../core/clock.ts';
import { type ClusterOutcome, fanOut } from '../core/fan-out.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { DEFAULT_HISTORY_BOUNDS } from '../state/history.ts';
import type { KhState } from '../state/resources.ts';
import type { MetricsOptions } from './error-label.ts';
import { mergeClusterMetrics } from './fleet-metrics.ts';
import { METRICS_CONTENT_TYPE, renderMetrics } from './metrics.ts';
import { buildPageData, type PageData } from './page-data.ts';
import { buildStatus, goJson, parseNamespaceFilter, type V2Status } from './status-json.ts';
import { renderStatusPage, statusPageHeaders } from './status-page.ts';
import {
  prefersHtml,
  STATUS_PATHS,
  type StatusRequest,
  type StatusResponse,
  statusRouteOf,
} from './status-routes.ts';

/** What one cluster shows: its khstates and HealthChecks, read within signal (its deadline). */
export interface ClusterSource {
  name: string;
  /** Throws when the cluster cannot be read now (unreachable, not listed yet): it is shown as such. */
  read(signal: AbortSignal): Promise<{ states: readonly KhState[]; healthChecks: readonly HealthCheck[] }>;
}

export interface FleetRoutesOptions {
  clusters: readonly ClusterSource[];
  currentMaster: string;
  clock: Clock;
  metrics?: MetricsOptions;
  /** Each cluster's time to answer one request; the others' are not held back by it. */
  deadlineMs: number;
  concurrency: number;
  refreshMs?: number;
}

type Read = Awaited<ReturnType<ClusterSource['read']>>;

/** One cluster in the fleet's JSON: v2's status document, or why it could not be read. */
export type FleetClusterJson = V2Status | { OK: false; Error: string };

/** The fleet's JSON: each cluster's v2 status keyed by name (never merged); OK only when all are. */
export interface FleetStatusJson {
  OK: boolean;
  /** Every cluster's errors, each prefixed with its cluster: `prod-eu: ...`. */
  Errors: string[];
  CurrentMaster: string;
  Clusters: Record<string, FleetClusterJson>;
}

const NO_STORE = { 'cache-control': 'no-store' };
const text = (status: number, body: string): StatusResponse => ({
  status,
  headers: { 'content-type': 'text/plain; charset=utf-8', ...NO_STORE },
  body: `${body}\n`,
});

/** The fleet's JSON from each cluster's outcome. Pure. */
export function fleetStatusJson(
  outcomes: readonly ClusterOutcome<Read>[],
  opts: { currentMaster: string; namespaces: readonly string[] },
): FleetStatusJson {
  const doc: FleetStatusJson = { OK: true, Errors: [], CurrentMaster: opts.currentMaster, Clusters: {} };
  for (const o of outcomes) {
    if (!o.ok) {
      doc.OK = false;
      doc.Errors.push(`${o.cluster}: cannot read the cluster: ${o.reason}`);
      doc.Clusters[o.cluster] = { OK: false, Error: o.reason };
      continue;
    }
    const status = buildStatus(o.value.states, {
      currentMaster: opts.currentMaster,
      namespaces: opts.namespaces,
      healthChecks: o.value.healthChecks,
    });
    doc.OK &&= status.OK;
    doc.Errors.push(...status.Errors.map((e) => `${o.cluster}: ${e}`));
    doc.Clusters[o.cluster] = status;
  }
  return doc;
}

/** The page's data over the fleet: each cluster's checks (keys prefixed with it), grouped in order. Pure. */
export function fleetPageData(
  outcomes: readonly ClusterOutcome<Read>[],
  opts: { currentMaster: string; namespaces: readonly string[]; nowMs: number },
): PageData {
  const data: PageData = {
    ok: true,
    nowMs: opts.nowMs,
    currentMaster: opts.currentMaster,
    checks: [],
    clusters: [],
  };
  for (const o of outcomes) {
    if (!o.ok) {
      data.ok = false;
      data.clusters?.push({ name: o.cluster, ok: false, error: o.reason });
      continue;
    }
    const one = buildPageData(o.value.states, { ...opts, healthChecks: o.value.healthChecks });
    data.ok &&= one.ok;
    data.clusters?.push({ name: o.cluster, ok: one.ok });
    data.checks.push(...one.checks.map((c) => ({ ...c, key: `${o.cluster}:${c.key}`, cluster: o.cluster })));
  }
  return data;
}

/**
 * The status routes over several clusters (`khrun serve --context A,B`, the status Lambda with
 * KHRUN_CLUSTERS), answering the same paths as one cluster's (status-routes.ts): each request reads every
 * cluster side by side, each within its deadline, and a cluster that cannot be read is shown as such:
 * an entry with its reason in the JSON (`Clusters`), its group on the page, `khrun_cluster_up 0` in the
 * metrics, whose every series carries a `cluster` label. `?cluster=A,B` narrows to those clusters and
 * `?namespace=` works as on one cluster's routes.
 */
export async function handleFleetStatusRequest(
  opts: FleetRoutesOptions,
  req: StatusRequest,
): Promise<StatusResponse | undefined> {
  const path = statusRouteOf(req.url);
  if (!path) return undefined;
  if (req.hasBody) {
    return text(400, 'status requests take no body; checker pods report to /externalCheckStatus');
  }
  const url = new URL(req.url, 'http://status.invalid');
  const namespaces = parseNamespaceFilter(url.searchParams.get('namespace'));
  const wanted = parseNamespaceFilter(url.searchParams.get('cluster'));
  const unknown = wanted.filter((c) => !opts.clusters.some((s) => s.name === c));
  if (unknown.length) {
    return text(
      404,
      `no cluster ${unknown.join(', ')} here; the clusters are ${opts.clusters.map((c) => c.name).join(', ')}`,
    );
  }
  if (path === STATUS_PATHS.logs) {
    // Not over several clusters: a log is one cluster's pod's, read where that cluster's runners are.
    return {
      status: 501,
      headers: { 'content-type': 'application/json; charset=utf-8', ...NO_STORE },
      body: goJson({
        error:
          "the last run's log is not served over several clusters; khrun logs CHECK -n NAMESPACE --context CLUSTER prints it",
      }),
    };
  }
  const sources = wanted.length ? opts.clusters.filter((c) => wanted.includes(c.name)) : opts.clusters;
  const byName = new Map(sources.map((s) => [s.name, s]));
  const outcomes = await fanOut(
    sources.map((s) => s.name),
    (name, signal) => byName.get(name)!.read(signal),
    { concurrency: opts.concurrency, deadlineMs: opts.deadlineMs },
  );
  const nowMs = opts.clock.nowMs();
  const common = { currentMaster: opts.currentMaster, namespaces };
  if (path === STATUS_PATHS.metrics) {
    const parts = await Promise.all(
      outcomes.map(async (o) => ({
        cluster: o.cluster,
        exposition: o.ok
          ? await renderMetrics(o.value.states, {
              ...common,
              nowMs,
              options: opts.metrics,
              healthChecks: o.value.healthChecks,
            })
          : undefined,
      })),
    );
    return {
      status: 200,
      headers: { 'content-type': METRICS_CONTENT_TYPE, ...NO_STORE },
      body: mergeClusterMetrics(parts),
    };
  }
  const json = { 'content-type': 'application/json; charset=utf-8', ...NO_STORE };
  const vary: Record<string, string> = path === STATUS_PATHS.root ? { vary: 'Accept' } : {};
  if (path === STATUS_PATHS.pageData) {
    return { status: 200, headers: json, body: goJson(fleetPageData(outcomes, { ...common, nowMs }), 0) };
  }
  if (path === STATUS_PATHS.page || (path === STATUS_PATHS.root && prefersHtml(req.accept))) {
    return {
      status: 200,
      headers: statusPageHeaders(vary),
      body: renderStatusPage({
        data: fleetPageData(outcomes, { ...common, nowMs }),
        dataUrl: STATUS_PATHS.pageData,
        logsUrl: STATUS_PATHS.logs,
        // The log route is one cluster's (above): no section opens by itself.
        autoOpenLogs: 0,
        refreshMs: opts.refreshMs ?? 5_000,
        historySlots: DEFAULT_HISTORY_BOUNDS.maxEntries,
      }),
    };
  }
  return { status: 200, headers: { ...json, ...vary }, body: goJson(fleetStatusJson(outcomes, common)) };
}
