import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { fleetStatusDocument, renderFleetTable } from '../../lib/commands/fleet-status.ts';
import { fleetTickDocument, fleetTickExit, fleetTickLines } from '../../lib/commands/fleet-tick.ts';
import type { ClusterOutcome } from '../../lib/core/fan-out.ts';
import type { TickEntry } from '../../lib/schedule/tick-entry.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import { OutcomeKind } from '../../lib/state/outcome-kind.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { addOutcome, emptyTotals, TOTALS_ANNOTATION } from '../../lib/state/totals.ts';
import { CLUSTER_UP, mergeClusterMetrics, withClusterLabel } from '../../lib/status/fleet-metrics.ts';
import { type ClusterSource, handleFleetStatusRequest } from '../../lib/status/fleet-routes.ts';
import { renderMetrics } from '../../lib/status/metrics.ts';
import type { ClusterTick } from '../../lib/tick/fleet-tick.ts';
import { parsePromText } from '../helpers/prom-text.ts';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);

function ran(namespace: string, name: string, errors: string[] = []): KhState {
  const state = newKhState(name, namespace);
  state.spec = {
    ...state.spec,
    OK: errors.length === 0,
    Errors: errors,
    RunDuration: '1.5s',
    LastRun: '2026-12-03T11:59:00Z',
    AuthoritativePod: 'khrun-runner',
    uuid: 'u',
  };
  return state;
}

const check = (namespace: string, name: string) =>
  ({ metadata: { namespace, name }, spec: {} }) as unknown as KhCheck;

const read = (states: KhState[]) => ({
  states,
  healthChecks: [],
  checks: states.map((s) => check(s.metadata.namespace, s.metadata.name)),
});
const ok = <T>(cluster: string, value: T): ClusterOutcome<T> => ({ cluster, ok: true, value, elapsedMs: 12 });
const down = <T>(cluster: string, reason: string, timedOut = false): ClusterOutcome<T> => ({
  cluster,
  ok: false,
  reason,
  timedOut,
  error: new Error(reason),
  elapsedMs: 40,
});

// The same namespace and check in both clusters, passing in one and failing in the other.
const eu = read([ran('checks', 'ping')]);
const us = read([ran('checks', 'ping', ['timed out'])]);

describe('the fleet status: keyed by cluster, an unreadable cluster shown', () => {
  it('-o json: each cluster its own v2 status, so checks of one name never merge', () => {
    const doc = fleetStatusDocument([ok('eu', eu), ok('us', us), down('ap', 'connection refused')], {
      currentMaster: 'me',
      namespaces: [],
    });
    expect(Object.keys(doc.clusters)).toEqual(['eu', 'us', 'ap']);
    const [e, u, a] = [doc.clusters.eu, doc.clusters.us, doc.clusters.ap];
    expect(e?.ok && e.status.CheckDetails['checks/ping']?.OK).toBe(true);
    expect(u?.ok && u.status.CheckDetails['checks/ping']?.Errors).toEqual(['timed out']);
    expect(a).toEqual({ ok: false, error: 'connection refused', timedOut: false });
  });

  it('the table: CLUSTER first, and one row saying why for a cluster that cannot be read', () => {
    const table = renderFleetTable([ok('eu', eu), ok('us', us), down('ap', 'no result within 15s')], {
      nowMs: NOW,
      color: false,
      wide: false,
    });
    const lines = table.split('\n').map((l) => l.split(/ {3,}/));
    expect(lines[0]).toEqual([
      'CLUSTER',
      'CHECK',
      'NAMESPACE',
      'OK',
      'LAST RUN',
      'DURATION',
      'FAILURES',
      'ERROR',
    ]);
    expect(lines[1]?.slice(0, 4)).toEqual(['eu', 'ping', 'checks', 'true']);
    expect(lines[2]?.slice(0, 4)).toEqual(['us', 'ping', 'checks', 'false']);
    expect(lines[2]?.at(-1)).toBe('timed out');
    expect(lines[3]).toEqual(['ap', '-', '-', 'unreachable', '-', '-', '-', 'no result within 15s']);
    // -o wide: the reason still in ERROR, every column between a dash.
    const wide = renderFleetTable([down('ap', 'refused')], { nowMs: NOW, color: false, wide: true });
    expect(wide.split('\n')[1]?.split(/ {3,}/)).toEqual([
      'ap',
      '-',
      '-',
      'unreachable',
      '-',
      '-',
      '-',
      '-',
      '-',
      '-',
      '-',
      '-',
      'refused',
    ]);
  });
});

describe('the fleet metrics: one exposition, a cluster label on every series', () => {
  it('labels a sample with or without labels', () => {
    expect(withClusterLabel('a_total 3', 'eu')).toBe('a_total{cluster="eu"} 3');
    expect(withClusterLabel('a{x="1 2"} 3', 'e"u')).toBe('a{cluster="e\\"u",x="1 2"} 3');
    expect(withClusterLabel('a{} 3', 'eu')).toBe('a{cluster="eu"} 3');
  });

  it('merges two clusters family by family (each once), and says which cluster is down', async () => {
    const render = (states: KhState[]) => renderMetrics(states, { currentMaster: 'me', nowMs: NOW });
    const text = mergeClusterMetrics([
      { cluster: 'eu', exposition: await render(eu.states) },
      { cluster: 'us', exposition: await render(us.states) },
      { cluster: 'ap', exposition: undefined },
    ]);
    // Strict: no family split in two, histograms consistent; and an independent parser agrees.
    const families = parsePromText(text);
    expect(parsePrometheusTextFormat(text).length).toBe(families.size);
    const checks = families.get('kuberhealthy_check')?.samples ?? [];
    expect(checks.map((s) => [s.labels.cluster, s.labels.check, s.value])).toEqual([
      ['eu', 'checks/ping', 1],
      ['us', 'checks/ping', 0],
    ]);
    for (const family of families.values())
      for (const s of family.samples) expect(s.labels.cluster, `${s.name} has a cluster label`).toBeDefined();
    expect(families.get(CLUSTER_UP)?.samples.map((s) => [s.labels.cluster, s.value])).toEqual([
      ['eu', 1],
      ['us', 1],
      ['ap', 0],
    ]);
    const histogram = families.get('kuberhealthy_check_run_duration_seconds');
    expect(new Set(histogram?.samples.map((s) => s.labels.cluster))).toEqual(new Set(['eu', 'us']));
  });

  it("labels the timeout and last-dispatch gauges too, so the alert rules' inputs stay apart per cluster", async () => {
    // The same check in both clusters, each dispatched by its own cluster's tick at another time.
    const dispatched = (atMs: number, timeoutMs: number) => {
      const state = ran('checks', 'ping');
      state.metadata.annotations = {
        [TOTALS_ANNOTATION]: JSON.stringify(
          addOutcome(emptyTotals(), {
            kind: OutcomeKind.Succeeded,
            durationMs: 1_000,
            atMs: NOW - 60_000,
            runIntervalMs: 300_000,
            timeoutMs,
          }),
        ),
        [ANNOTATION.dispatch]: JSON.stringify({ atMs, ref: 'khrun-run-ping-1', by: 'tick-1' }),
      };
      return state;
    };
    const render = (states: KhState[]) => renderMetrics(states, { currentMaster: 'me', nowMs: NOW });
    const text = mergeClusterMetrics([
      { cluster: 'eu', exposition: await render([dispatched(NOW - 65_000, 90_000)]) },
      { cluster: 'us', exposition: await render([dispatched(NOW - 5_000, 30_000)]) },
    ]);
    const families = parsePromText(text);
    const values = (name: string) =>
      families.get(name)?.samples.map((s) => [s.labels.cluster, s.labels.check, s.value]);
    expect(values('kuberhealthy_check_timeout_seconds')).toEqual([
      ['eu', 'checks/ping', 90],
      ['us', 'checks/ping', 30],
    ]);
    expect(values('kuberhealthy_check_last_dispatch_timestamp_seconds')).toEqual([
      ['eu', 'checks/ping', (NOW - 65_000) / 1000],
      ['us', 'checks/ping', (NOW - 5_000) / 1000],
    ]);
  });
});

describe('the fleet status routes', () => {
  const source = (name: string, states: KhState[]): ClusterSource => ({
    name,
    read: async () => ({ states, healthChecks: [] }),
  });
  const hung: ClusterSource = { name: 'hung', read: () => new Promise(() => {}) };
  const opts = (clusters: ClusterSource[]) => ({
    clusters,
    currentMaster: 'serve-0',
    clock: { nowMs: () => NOW },
    deadlineMs: 100,
    concurrency: 4,
  });
  const get = (clusters: ClusterSource[], url: string, accept?: string) =>
    handleFleetStatusRequest(opts(clusters), { url, accept, hasBody: false });

  it('JSON keyed by cluster; a cluster that does not answer in time is an entry with the reason', async () => {
    const started = performance.now();
    const res = await get([source('eu', eu.states), hung, source('us', us.states)], '/json');
    expect(performance.now() - started).toBeLessThan(2_000);
    const doc = JSON.parse(res?.body ?? '');
    expect(Object.keys(doc.Clusters)).toEqual(['eu', 'hung', 'us']);
    expect(doc.OK).toBe(false);
    expect(doc.Clusters.hung).toEqual({ OK: false, Error: "no result within 0.1s (the cluster's deadline)" });
    expect(doc.Clusters.eu.CheckDetails['checks/ping'].OK).toBe(true);
    expect(doc.Errors).toEqual([
      "hung: cannot read the cluster: no result within 0.1s (the cluster's deadline)",
      'us: timed out',
    ]);
  });

  it('?cluster= narrows; an unknown cluster is 404; a body is 400', async () => {
    const clusters = [source('eu', eu.states), source('us', us.states)];
    const res = await get(clusters, '/json?cluster=us');
    expect(Object.keys(JSON.parse(res?.body ?? '').Clusters)).toEqual(['us']);
    expect((await get(clusters, '/json?cluster=mars'))?.status).toBe(404);
    expect((await handleFleetStatusRequest(opts(clusters), { url: '/json', hasBody: true }))?.status).toBe(
      400,
    );
    expect(await get(clusters, '/nope')).toBeUndefined();
  });

  it("/api/logs is one cluster's: 501 naming the command that reads it, no cluster read", async () => {
    let reads = 0;
    const counted: ClusterSource = {
      name: 'eu',
      read: async () => {
        reads++;
        return { states: eu.states, healthChecks: [] };
      },
    };
    const res = await get([counted], '/api/logs?namespace=checks&check=ping');
    expect(res?.status).toBe(501);
    expect(JSON.parse(res?.body ?? '').error).toMatch(/khrun logs CHECK -n NAMESPACE --context CLUSTER/);
    expect(reads).toBe(0);
  });

  it('the page groups by cluster: its data names each cluster, the checks keyed apart', async () => {
    const res = await get([source('eu', eu.states), source('us', us.states), hung], '/status/data');
    const data = JSON.parse(res?.body ?? '');
    expect(data.clusters).toEqual([
      { name: 'eu', ok: true },
      { name: 'us', ok: false },
      { name: 'hung', ok: false, error: "no result within 0.1s (the cluster's deadline)" },
    ]);
    expect(data.checks.map((c: { key: string; cluster: string }) => [c.key, c.cluster])).toEqual([
      ['eu:checks/ping', 'eu'],
      ['us:checks/ping', 'us'],
    ]);
    const page = await get([source('eu', eu.states)], '/', 'text/html');
    expect(page?.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page?.body).toContain('"clusters":[{"name":"eu","ok":true}]');
  });
});

describe('the fleet tick output', () => {
  const entry = (checkName: string, result: TickEntry['result']): TickEntry =>
    ({
      check: checkName,
      result,
      ref: 'khrun-run-x',
      decision: { due: true, reason: 'never-run' },
      ...(result === 'failed' ? { error: 'forbidden' } : {}),
    }) as TickEntry;
  const tick = (entries: TickEntry[]): ClusterTick => ({ entries, nowMs: NOW });

  it('text: each line prefixed with its cluster, a failed cluster with its reason, a fleet line', () => {
    const lines = fleetTickLines([
      ok('eu', tick([entry('checks/ping', 'dispatched')])),
      down('us', 'connection refused'),
    ]);
    expect(lines).toEqual([
      '[eu] checks/ping: dispatched khrun-run-x (never-run)',
      '[eu] tick: 1 checks, 1 dispatched in 0.0s',
      '[us] tick FAILED after 0.0s: connection refused',
      'fleet: 2 clusters, 1 failed (us)',
    ]);
  });

  it('-o json keyed by cluster; exit 1 for a failed cluster or a failed dispatch, else 0', () => {
    const outcomes = [
      ok('eu', tick([entry('checks/ping', 'dispatched')])),
      down<ClusterTick>('us', 'gone', true),
    ];
    expect(fleetTickDocument(outcomes)).toEqual({
      clusters: {
        eu: { ok: true, elapsedMs: 12, entries: [entry('checks/ping', 'dispatched')] },
        us: { ok: false, elapsedMs: 40, timedOut: true, error: 'gone' },
      },
    });
    expect(fleetTickExit(outcomes)).toBe(1);
    expect(fleetTickExit([outcomes[0]!])).toBe(0);
    expect(fleetTickExit([ok('eu', tick([entry('checks/ping', 'failed')]))])).toBe(1);
  });
});
