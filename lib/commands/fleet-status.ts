import { type ClusterOutcome, fanOut } from '../core/fan-out.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
import { listHealthChecks } from '../status/healthcheck-cache.ts';
import { listKhStates } from '../status/state-cache.ts';
import { buildStatus, goJson, type V2Status } from '../status/status-json.ts';
import { formatDocument } from './document.ts';
import {
  healthCheckRows,
  listChecks,
  mergeRows,
  type StatusOutput,
  type StatusRow,
  statusCells,
  statusHeader,
  statusRows,
} from './status.ts';
import { formatTable, paint } from './table.ts';

/** What one cluster holds, as `khrun status` reads it. */
export interface ClusterRead {
  checks: KhCheck[];
  states: KhState[];
  healthChecks: HealthCheck[];
}

/** One cluster's lists, in one go (a 429 while its storage settles is tried again, within its deadline). */
export async function readCluster(client: KubeClient, namespaces: readonly string[]): Promise<ClusterRead> {
  const [checks, states, healthChecks] = await Promise.all([
    listChecks(client, namespaces),
    retryTransient(() => listKhStates(client, namespaces)),
    retryTransient(() => listHealthChecks(client, namespaces)),
  ]);
  return { checks, states, healthChecks };
}

/** One cluster in `khrun status -o json|yaml` over a fleet: v2's status document, or why there is none. */
export type ClusterStatusJson =
  | { ok: true; status: V2Status }
  | { ok: false; error: string; timedOut: boolean };

/**
 * The fleet's status document: each cluster's v2 status keyed by its name, so two clusters' checks of the
 * same namespace and name never merge; a cluster that could not be read is an entry with the reason.
 */
export function fleetStatusDocument(
  outcomes: readonly ClusterOutcome<ClusterRead>[],
  opts: { currentMaster: string; namespaces: readonly string[] },
): { clusters: Record<string, ClusterStatusJson> } {
  const clusters: Record<string, ClusterStatusJson> = {};
  for (const o of outcomes) {
    clusters[o.cluster] = o.ok
      ? {
          ok: true,
          status: buildStatus(o.value.states, {
            currentMaster: opts.currentMaster,
            namespaces: opts.namespaces,
            healthChecks: o.value.healthChecks,
          }),
        }
      : { ok: false, error: o.reason, timedOut: o.timedOut };
  }
  return { clusters };
}

/**
 * The fleet's table: `khrun status`'s columns behind a CLUSTER column, each cluster's rows in its order
 * and the clusters in the order given; a cluster that could not be read is one row saying so (OK
 * `unreachable`, the reason in ERROR), never left out.
 */
export function renderFleetTable(
  outcomes: readonly ClusterOutcome<ClusterRead>[],
  opts: { nowMs: number; color: boolean; wide: boolean },
): string {
  const rows = outcomes.map((o) => ({
    cluster: o.cluster,
    outcome: o,
    rows: o.ok
      ? mergeRows(statusRowsOf(o.value), healthCheckRows(o.value.healthChecks))
      : ([] as StatusRow[]),
  }));
  const kinds = rows.some((c) => c.rows.some((r) => r.kind));
  const header = ['CLUSTER', ...statusHeader(opts.wide, kinds)];
  const lines: string[][] = [header.map((h) => paint(h, 'bold', opts.color))];
  for (const c of rows) {
    const name = safe(c.cluster);
    if (!c.outcome.ok) {
      // CLUSTER, [KIND], CHECK, NAMESPACE, OK ... ERROR: a dash in every column between OK and ERROR.
      const between = header.length - 5 - (kinds ? 1 : 0);
      lines.push([
        name,
        ...(kinds ? ['-'] : []),
        '-',
        '-',
        paint('unreachable', 'red', opts.color),
        ...Array.from({ length: between }, () => '-'),
        paint(safe(c.outcome.reason), 'red', opts.color),
      ]);
      continue;
    }
    if (c.rows.length === 0) {
      lines.push([name, ...Array.from({ length: header.length - 2 }, () => '-'), 'No checks found.']);
      continue;
    }
    for (const r of c.rows) lines.push([name, ...statusCells(r, { ...opts, kinds })]);
  }
  return formatTable(lines);
}

export interface FleetStatusOptions {
  clusters: readonly string[];
  /** One cluster's client object, its requests cut at the cluster's deadline (signal). */
  clientFor: (cluster: string, signal: AbortSignal) => KubeClient;
  concurrency: number;
  deadlineMs: number;
  namespaces: string[];
  output: StatusOutput;
  color: boolean;
  currentMaster: string;
  nowMs: () => number;
  write: (text: string) => void;
}

/**
 * `khrun status --context A,B` / `--all-contexts`: every cluster read side by side, each within its own
 * deadline, then one table (a CLUSTER column) or one document keyed by cluster. Exit 1 when a cluster
 * could not be read (everything that could is printed all the same), else 0.
 */
export async function fleetStatusCommand(opts: FleetStatusOptions): Promise<number> {
  const outcomes = await fanOut(
    opts.clusters,
    (cluster, signal) => readCluster(opts.clientFor(cluster, signal), opts.namespaces),
    { concurrency: opts.concurrency, deadlineMs: opts.deadlineMs },
  );
  if (opts.output === 'json' || opts.output === 'yaml') {
    const doc = fleetStatusDocument(outcomes, opts);
    opts.write(opts.output === 'json' ? goJson(doc) : formatDocument(doc, 'yaml'));
  } else {
    opts.write(
      renderFleetTable(outcomes, { nowMs: opts.nowMs(), color: opts.color, wide: opts.output === 'wide' }),
    );
  }
  return outcomes.every((o) => o.ok) ? 0 : 1;
}

function statusRowsOf(read: ClusterRead): StatusRow[] {
  return statusRows(read.checks, read.states);
}
