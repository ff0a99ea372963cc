import { readFile } from 'node:fs/promises';
import type { LocalCluster } from '@khrun/devkit/local/cluster.ts';
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runListWatch } from '../../../lib/kube/list-watch.ts';
import { DEFAULT_API_RETRY_MS } from '../../../lib/report/handle-report.ts';
import { goCheckerBinary } from '../helpers/khrun.ts';
import { type Gate, startGate } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms } from './helpers/fault-table.ts';
import { type Runner, stopRunner, type Target } from './helpers/khrun-process.ts';
import { type OutageSetup, outageNamespaces, reportClients, runOutage } from './helpers/outage.ts';
import { startOwnCluster } from './helpers/own-cluster.ts';

// The control plane failing under live runs, on a cluster of this file's own: kube-apiserver stopped
// (etcd keeps the data) and started again while runs wait for their reports, then etcd stopped the same
// way, then an API outage longer than the report endpoint waits, then kube-apiserver SIGKILLed. The checkers report
// inside the outage; the runs must end with the outcomes the checkers reported, nothing lost. Then
// runListWatch against the real API server: a watch the server ends is resumed, a 410 relists.

let cluster: LocalCluster;
let target: Target;
let kc: KubeConfig;
let gate: Gate;
let setup: OutageSetup;
const runners: Runner[] = [];
/** How long the component stays down once every checker has sent its report: the fault's length. */
const OUTAGE_MS = 5_000;
/** Longer than the report endpoint waits for the API server (DEFAULT_API_RETRY_MS) by a clear margin. */
const LONG_OUTAGE_MS = DEFAULT_API_RETRY_MS + 10_000;

beforeAll(async () => {
  ({ cluster, target } = await startOwnCluster());
  kc = cluster.kubeConfig;
  gate = await startGate(target.hostIp);
  const namespaces = await outageNamespaces(kc, [
    'apiserver',
    'etcd',
    'longout',
    'apikill',
    'watch',
    'noise',
  ]);
  setup = { kc, target, gate, clients: reportClients(await goCheckerBinary()), runners, namespaces };
}, 180_000);
afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  await gate?.close();
  await cluster?.stop();
});

/** The kube-apiserver process of this file's cluster, found by name among the control plane's. */
async function apiServerPid(): Promise<number> {
  for (const pid of cluster.controlPlane.pids()) {
    const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === 'kube-apiserver') return pid;
  }
  throw new Error('no kube-apiserver process in this cluster');
}

/** SIGKILL, no SIGTERM first: no graceful shutdown, connections cut mid-request. Resolves once it is gone. */
async function killApiServer(): Promise<void> {
  const pid = await apiServerPid();
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 10_000;
  // Bounded wait for the kernel to reap it (the supervisor's exit handler then forgets it).
  while (cluster.controlPlane.pids().includes(pid)) {
    if (Date.now() > deadline) throw new Error(`kube-apiserver ${pid} still listed 10 s after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the control plane failing while runs wait for their reports', () => {
  it('kube-apiserver stopped and started again: every report lands, every run ends as reported', async () => {
    const row = faultScenario('control plane: kube-apiserver stopped while runs wait');
    const r = await runOutage(setup, 'apiserver', {
      stop: () => cluster.controlPlane.stopApiServer(),
      start: () => cluster.controlPlane.startApiServer(),
      holdMs: OUTAGE_MS,
    });
    await row.record({
      fault: `control plane: kube-apiserver stopped while ${r.runs} runs wait, reports sent during the outage`,
      runs: r.runs,
      outcome: `API server down ${ms(r.downMs)}, the reports sent ${ms(r.heldMs)} before it answered again; the runners' endpoints held them (${r.waited} retries) and ${r.recorded} of ${r.runs} runs recorded what their checker reported (Go checkclient ×2, retrying client, npm client); watches resumed ${r.resumed}×; no run UUID in the logs`,
      reported: r.reported,
      recorded: r.recorded,
    });
    expect(r.problems).toEqual([]);
  }, 240_000);

  it('etcd stopped and started again: every report lands, every run ends as reported', async () => {
    const row = faultScenario('control plane: etcd stopped while runs wait');
    const r = await runOutage(setup, 'etcd', {
      stop: () => cluster.controlPlane.stopEtcd(),
      start: () => cluster.controlPlane.startEtcd(),
      holdMs: OUTAGE_MS,
    });
    await row.record({
      fault: `control plane: etcd stopped while ${r.runs} runs wait, reports sent during the outage`,
      runs: r.runs,
      outcome: `etcd down ${ms(r.downMs)}, the reports sent ${ms(r.heldMs)} before it answered again (the API server held the requests; ${r.waited} retries at the endpoints); ${r.recorded} of ${r.runs} runs recorded what their checker reported; watches resumed ${r.resumed}×; no run UUID in the logs`,
      reported: r.reported,
      recorded: r.recorded,
    });
    expect(r.problems).toEqual([]);
  }, 240_000);

  it(`an API outage longer than the report endpoint's ${DEFAULT_API_RETRY_MS / 1000} s wait: every report lands all the same`, async () => {
    const row = faultScenario("control plane: kube-apiserver down longer than the report endpoint's wait");
    const r = await runOutage(setup, 'longout', {
      stop: () => cluster.controlPlane.stopApiServer(),
      start: () => cluster.controlPlane.startApiServer(),
      holdMs: LONG_OUTAGE_MS,
    });
    await row.record({
      fault: `control plane: kube-apiserver down longer than the report endpoint's ${ms(DEFAULT_API_RETRY_MS)} wait, ${r.runs} runs waiting, reports sent at its start`,
      runs: r.runs,
      outcome: `API server down ${ms(r.downMs)}, the reports sent ${ms(r.heldMs)} before it answered again; ${r.waited} retries at the endpoints, ${r.gaveUp} answered 500; ${r.recorded} of ${r.runs} runs recorded what their checker reported${r.lostBy.length ? ` (not: ${r.lostBy.join(', ')})` : ''}; watches resumed ${r.resumed}×`,
      reported: r.reported,
      recorded: r.recorded,
    });
    expect(r.problems).toEqual([]);
  }, 300_000);

  it('kube-apiserver SIGKILLed and started again: every report lands, every run ends as reported', async () => {
    const row = faultScenario('control plane: kube-apiserver SIGKILLed while runs wait');
    const r = await runOutage(setup, 'apikill', {
      stop: killApiServer,
      start: () => cluster.controlPlane.startApiServer(),
      holdMs: OUTAGE_MS,
    });
    await row.record({
      fault: `control plane: kube-apiserver SIGKILLed (no graceful shutdown) while ${r.runs} runs wait, reports sent during the outage`,
      runs: r.runs,
      outcome: `API server gone ${ms(r.downMs)}, the reports sent ${ms(r.heldMs)} before a new one answered; the endpoints held them (${r.waited} retries) and ${r.recorded} of ${r.runs} runs recorded what their checker reported; watches resumed ${r.resumed}×; no run UUID in the logs`,
      reported: r.reported,
      recorded: r.recorded,
    });
    expect(r.problems).toEqual([]);
  }, 240_000);

  it('runListWatch resumes a watch the server ended, and lists again after 410 Gone', async () => {
    const fault =
      'control plane: a watch ended by the server (API server restart), resumed from a revision the restarted server no longer serves';
    const row = faultScenario(fault);
    const ns = setup.namespaces.get('watch') ?? '';
    const noise = setup.namespaces.get('noise') ?? '';
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'watched' }, data: { v: '0' } },
    });
    const interruptions: string[] = [];
    let latest = '';
    let wake: (() => void) | undefined;
    const stop = new AbortController();
    const watching = runListWatch<V1ConfigMap>({
      kc,
      path: `/api/v1/namespaces/${ns}/configmaps`,
      signal: stop.signal,
      onChange: (items) => {
        latest = items.get(`${ns}/watched`)?.data?.v ?? '';
        wake?.();
      },
      onInterruption: (reason) => interruptions.push(reason),
    });
    const seen = (value: string, timeoutMs: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`the watch never delivered v=${value} (last: ${latest})`)),
          timeoutMs,
        );
        wake = () => {
          if (latest !== value) return;
          clearTimeout(timer);
          resolve();
        };
        wake();
      });
    try {
      await seen('0', 10_000);
      // Other writes move etcd's revision past the one this watch resumes from; restarted, the API
      // server's watch cache starts at the new revision, so resuming from the old one is 410 Gone.
      for (let i = 0; i < 20; i++) {
        await core.createNamespacedConfigMap({ namespace: noise, body: { metadata: { name: `n${i}` } } });
      }
      await cluster.controlPlane.stopApiServer();
      await cluster.controlPlane.startApiServer();
      await core.replaceNamespacedConfigMap({
        name: 'watched',
        namespace: ns,
        body: { metadata: { name: 'watched' }, data: { v: '1' } },
      });
      await seen('1', 30_000);
    } finally {
      stop.abort();
      await watching;
    }
    const gone = interruptions.filter((r) => /410 Gone/.test(r)).length;
    await row.record({
      fault,
      runs: 1,
      outcome: `runListWatch saw ${interruptions.length} interruption(s), ${gone} of them 410 Gone, listed again and delivered the next change (no checker involved: nothing reported, nothing to record)`,
      reported: 0,
      recorded: 0,
    });
    expect(interruptions.length).toBeGreaterThan(0);
    expect(gone, interruptions.join('\n')).toBeGreaterThan(0);
  }, 120_000);
});
