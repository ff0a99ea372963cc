import { CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runListWatch } from '../../../lib/kube/list-watch.ts';
import type { LocalCluster } from '../../../lib/local/cluster.ts';
import { readAcceptedReport, readLastOutcome } from '../../../lib/state/khstate.ts';
import { freshNamespace } from '../helpers/cluster.ts';
import { createCheck, goCheckerBinary, npmClientEnv, readState } from '../helpers/khrun.ts';
import {
  type CheckerOptions,
  checkerContainer,
  type Gate,
  NPM_CLIENT_REPORT,
  startGate,
} from './helpers/checker.ts';
import { ms, recordFault } from './helpers/fault-table.ts';
import { isRunning, stateProblems, waitForCheckPod } from './helpers/invariants.ts';
import {
  logLines,
  type Runner,
  resultOf,
  startRunner,
  stopRunner,
  type Target,
} from './helpers/khrun-process.ts';
import { startOwnCluster } from './helpers/own-cluster.ts';

// The control plane failing under live runs, on a cluster of this file's own: kube-apiserver stopped
// (etcd keeps the data) and started again while runs wait for their reports, then etcd the same way. The
// checkers report inside the outage; the runs must end with the outcomes the checkers reported, nothing
// lost. Then runListWatch against the real API server: a watch the server ends is resumed, a 410 relists.

let cluster: LocalCluster;
let target: Target;
let kc: KubeConfig;
let gate: Gate;
let goChecker: string;
const runners: Runner[] = [];
/** How long the component stays down once every checker has sent its report: the fault's length. */
const OUTAGE_MS = 5_000;

beforeAll(async () => {
  ({ cluster, target } = await startOwnCluster());
  kc = cluster.kubeConfig;
  gate = await startGate(target.hostIp);
  goChecker = await goCheckerBinary();
}, 180_000);
afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  await gate?.close();
  await cluster?.stop();
});

interface Client {
  name: string;
  checker: (opts: CheckerOptions) => CheckerOptions;
  expected: { kind: string; errors?: string[] };
}

/** The report clients in use: v2.7.1's Go checkclient (both outcomes), a retrying client, the npm client. */
const CLIENTS: Client[] = [
  { name: 'go-ok', checker: (o) => ({ ...o, exec: goChecker }), expected: { kind: 'Succeeded' } },
  {
    name: 'go-fail',
    checker: (o) => ({ ...o, exec: goChecker, execArgs: ['fail'] }),
    expected: { kind: 'Failed', errors: ['go checkclient reported a failure'] },
  },
  { name: 'retrying', checker: (o) => o, expected: { kind: 'Succeeded' } },
  {
    name: 'npm',
    checker: (o) => ({ ...o, exec: process.execPath, execArgs: NPM_CLIENT_REPORT, env: npmClientEnv }),
    expected: { kind: 'Succeeded' },
  },
];

async function outage(label: string, stop: () => Promise<void>, start: () => Promise<void>) {
  const ns = await freshNamespace(kc, `f-${label}`);
  for (const c of CLIENTS) {
    const name = `${label}-${c.name}`;
    await createCheck(
      kc,
      ns,
      name,
      {
        containers: [
          checkerContainer(c.checker({ gateUrl: gate.waitUrl(name), notifyUrl: gate.notifyUrl(name) })),
        ],
      },
      { timeout: '3m' },
    );
  }
  const live = CLIENTS.map((c) => {
    const runner = startRunner(`${label}-${c.name}`, ns, {}, target);
    runners.push(runner);
    return runner;
  });
  await Promise.all(
    CLIENTS.map((c) => waitForCheckPod(kc, ns, `${label}-${c.name}`, isRunning, 'pod Running', 90_000)),
  );

  await stop();
  const downAt = Date.now();
  for (const c of CLIENTS) gate.open(`${label}-${c.name}`);
  const notified = (
    await Promise.all(CLIENTS.map((c) => gate.notified(`${label}-${c.name}`, 30_000).then(() => 1)))
  ).length;
  const reportedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  await start();
  // From the moment it was down to the moment it answered again, and how long the reports were in flight.
  const downMs = Date.now() - downAt;
  const heldMs = Date.now() - reportedAt;

  const exits = await Promise.all(live.map((r) => r.done));
  const problems: string[] = [];
  let recorded = 0;
  let resumed = 0;
  let waited = 0;
  for (const [i, c] of CLIENTS.entries()) {
    const check = `${label}-${c.name}`;
    const exit = exits[i]!;
    const output = `${exit.stdout}${exit.stderr}`;
    const result = resultOf(exit);
    const state = await readState(kc, ns, check);
    const reported = readAcceptedReport(state);
    resumed += logLines(output).filter((l) => l.message === 'watch interrupted; resuming').length;
    waited += logLines(output).filter(
      (l) => l.message === 'API server unavailable; the report waits for it',
    ).length;
    const errorsAsReported =
      !c.expected.errors || JSON.stringify(result?.errors) === JSON.stringify(c.expected.errors);
    if (
      exit.code !== 0 ||
      result?.result !== 'recorded' ||
      result.kind !== c.expected.kind ||
      !errorsAsReported
    ) {
      problems.push(`${check}: exit ${exit.code}, ${JSON.stringify(result)}\n${output.slice(-3000)}`);
      continue;
    }
    problems.push(...stateProblems(state, ns).map((p) => `${check}: ${p}`));
    if (reported?.uuid !== state?.spec.uuid || readLastOutcome(state)?.kind !== c.expected.kind)
      problems.push(`${check}: the khstate does not carry the report of its run`);
    else recorded++;
    // The run UUID is a credential: not even the errors of an outage may carry it into the logs.
    if (state?.spec.uuid && output.includes(state.spec.uuid))
      problems.push(`${check}: the run UUID appears in full in the runner's output`);
  }
  expect(problems).toEqual([]);
  // Every checker called the gate just before it reported (awaited above): one report per run.
  return { downMs, heldMs, reported: notified, recorded, resumed, waited, runs: CLIENTS.length };
}

describe('the control plane failing while runs wait for their reports', () => {
  it('kube-apiserver stopped and started again: every report lands, every run ends as reported', async () => {
    const r = await outage(
      'apiserver',
      () => cluster.controlPlane.stopApiServer(),
      () => cluster.controlPlane.startApiServer(),
    );
    await recordFault({
      fault: 'control plane: kube-apiserver stopped while 4 runs wait, reports sent during the outage',
      runs: r.runs,
      outcome: `API server down ${ms(r.downMs)}, the reports sent ${ms(r.heldMs)} before it answered again; the runners' endpoints held them (${r.waited} retries) and ${r.recorded} of ${r.runs} runs recorded what their checker reported (Go checkclient ×2, retrying client, npm client); watches resumed ${r.resumed}×; no run UUID in the logs`,
      reported: r.reported,
      recorded: r.recorded,
    });
  }, 240_000);

  it('etcd stopped and started again: every report lands, every run ends as reported', async () => {
    const r = await outage(
      'etcd',
      () => cluster.controlPlane.stopEtcd(),
      () => cluster.controlPlane.startEtcd(),
    );
    await recordFault({
      fault: 'control plane: etcd stopped while 4 runs wait, reports sent during the outage',
      runs: r.runs,
      outcome: `etcd down ${ms(r.downMs)}, the reports sent ${ms(r.heldMs)} before it answered again (the API server held the requests; ${r.waited} retries at the endpoints); ${r.recorded} of ${r.runs} runs recorded what their checker reported; watches resumed ${r.resumed}×; no run UUID in the logs`,
      reported: r.reported,
      recorded: r.recorded,
    });
  }, 240_000);

  it('runListWatch resumes a watch the server ended, and lists again after 410 Gone', async () => {
    const ns = await freshNamespace(kc, 'f-watch');
    const noise = await freshNamespace(kc, 'f-watch-noise');
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
    expect(interruptions.length).toBeGreaterThan(0);
    const gone = interruptions.filter((r) => /410 Gone/.test(r)).length;
    expect(gone, interruptions.join('\n')).toBeGreaterThan(0);
    await recordFault({
      fault:
        'control plane: a watch ended by the server (API server restart), resumed from a revision the restarted server no longer serves',
      runs: 1,
      outcome: `runListWatch saw ${interruptions.length} interruption(s), ${gone} of them 410 Gone, listed again and delivered the next change (no checker involved: nothing reported, nothing to record)`,
      reported: 0,
      recorded: 0,
    });
  }, 120_000);
});
