import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { KUBELET_USER_AGENT } from '@khrun/devkit/local/kubelet/api.ts';
import { AppsV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { abortableDelay } from '../../lib/core/abort.ts';
import { silentLog } from '../../lib/core/log.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { runListWatch } from '../../lib/kube/list-watch.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import type { TickEntry } from '../../lib/schedule/tick-entry.ts';
import { parseHistory } from '../../lib/state/history.ts';
import { ANNOTATION, readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { readOwnerMarker } from '../../lib/takeover/owner-marker.ts';
import { runTick } from '../../lib/tick/tick.ts';
import { tickKube } from '../../lib/tick/tick-kube.ts';
import { auditEvents } from './faults/helpers/audit.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { kubectl } from './helpers/deploy.ts';
import {
  createCheck,
  type KhrunResult,
  nodeContainer,
  outcomeOf,
  repoRoot,
  runKhrun,
} from './helpers/khrun.ts';
import { type KuberhealthyV2Daemon, startKuberhealthyV2, V2_DEPLOYMENT } from './helpers/kuberhealthy-v2.ts';

// The real Kuberhealthy v2.7.1 daemon (its own Deployment) runs two khchecks on a short interval; khrun,
// deployed beside it (a tick every 2 s whose dispatches are real `khrun run` processes), refuses them; then
// `khrun takeover` and `khrun handback` move them over and back. Every checker pod of both systems is
// recorded from a watch (its run-id, its creation and end by the API server's and kubelet's clocks), and the
// runs of each check must neither overlap nor leave a gap longer than the bound docs/migrating.md states.

const kc = adminKubeConfig();
/** The test's one client object: its clock, fed by the tick's requests here, times the dispatches and windows. */
const client = kubeClient(kc);
const INTERVAL_S = 30;
const TICK_MS = 2_000;
const CHECKS = ['alpha', 'bravo'];
let ns: string;
let khNs: string;
let daemon: KuberhealthyV2Daemon | undefined;

/** One checker pod as the watch last saw it. */
interface PodRun {
  check: string;
  runId: string;
  name: string;
  createdMs: number;
  endedMs?: number;
}
const podRuns = new Map<string, PodRun>();
const recorder = new AbortController();

function endOf(pod: V1Pod): number | undefined {
  const finished = pod.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
  if (finished) return new Date(finished).getTime();
  const deleting = pod.metadata?.deletionTimestamp;
  return deleting ? new Date(deleting).getTime() : undefined;
}

function recordPods(items: ReadonlyMap<string, V1Pod>) {
  for (const pod of items.values()) {
    const runId = pod.metadata?.labels?.['kuberhealthy-run-id'];
    const check = pod.metadata?.labels?.['kuberhealthy-check-name'];
    if (!runId || !check || !pod.metadata?.creationTimestamp) continue;
    const prior = podRuns.get(pod.metadata.name ?? '');
    podRuns.set(pod.metadata.name ?? '', {
      check,
      runId,
      name: pod.metadata.name ?? '',
      createdMs: new Date(pod.metadata.creationTimestamp).getTime(),
      endedMs: endOf(pod) ?? prior?.endedMs,
    });
  }
}

/** The tick khrun would run in the cluster, every TICK_MS; its dispatches are real `khrun run` processes. */
const ticking = new AbortController();
const runs = new Set<Promise<KhrunResult>>();
const tickLog: { atMs: number; entries: TickEntry[] }[] = [];
/** When the tick sent a runner for a check, by the API server's clock. */
const dispatches: { check: string; atMs: number }[] = [];
const tickWaiters = new Set<(entries: TickEntry[]) => void>();
let tickLoop: Promise<void> | undefined;

function startTickLoop() {
  const clock = client.clock;
  const dispatcher: Dispatcher = {
    refFor: (check, nowMs) => `test-${check.name}-${nowMs}`,
    async dispatch(check) {
      dispatches.push({ check: check.name, atMs: clock.nowMs() });
      const run = runKhrun(['--check', check.name, '-n', check.namespace, '-o', 'json']);
      runs.add(run);
      void run.finally(() => runs.delete(run));
    },
  };
  tickLoop = (async () => {
    while (!ticking.signal.aborted) {
      const entries = await runTick(
        { kube: tickKube(client), dispatcher, clock, log: silentLog },
        {
          scope: { namespaces: [ns] },
          identity: 'takeover-test-tick',
          timings: { tickPeriodMs: TICK_MS, dispatchTtlMs: 60_000, maxFirstRunJitterMs: 0 },
        },
      );
      tickLog.push({ atMs: clock.nowMs(), entries });
      for (const waiter of tickWaiters) waiter(entries);
      await abortableDelay(TICK_MS, ticking.signal).catch(() => undefined);
    }
  })();
}

/** `khrun takeover` / `khrun handback`, the real entrypoint, with the admin's (the operator's) credentials. */
function khrun(args: string[]): Promise<KhrunResult & { ms: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), ...args], {
    env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), POWERTOOLS_LOG_LEVEL: 'WARN' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

const statesPath = () => `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/${KHSTATE_PLURAL}`;

/** Waits, by watch, until decide holds for the khstates of every check. */
function untilStates(decide: (s: KhState) => boolean, description: string, timeoutMs = 120_000) {
  return waitFor<KhState, KhState[]>(kc, {
    path: statesPath(),
    decide: (items) => {
      const states = CHECKS.map((c) => items.get(`${ns}/${c}`));
      return states.every((s) => s && decide(s)) ? (states as KhState[]) : undefined;
    },
    timeoutMs,
    description,
  });
}

const byKuberhealthy = (s: KhState) => s.spec.AuthoritativePod.startsWith(`${V2_DEPLOYMENT}-`);

/**
 * The runs of a check in start order. A run the tick sent is late by its runner's start-up (dispatch to
 * pod creation: a `khrun run` process here, a Job's pod in a cluster); each gap is judged against the
 * interval plus that start-up, one tick period, a second of rounding (creationTimestamp has second
 * precision) and, for the gap that spans the takeover, the takeover's own duration.
 */
function timeline(check: string, takeover?: { startMs: number; endMs: number }) {
  const list = [...podRuns.values()]
    .filter((r) => r.check === check)
    .sort((a, b) => a.createdMs - b.createdMs);
  const overlaps = list
    .slice(1)
    .filter((r, i) => r.createdMs < (list[i]!.endedMs ?? Number.POSITIVE_INFINITY));
  const pairs = list.slice(1).map((b, i) => {
    const a = list[i]!;
    const sent = dispatches
      .filter((d) => d.check === check && d.atMs <= b.createdMs + 1_000 && d.atMs >= a.createdMs)
      .at(-1);
    const startupMs = sent ? Math.max(0, b.createdMs - sent.atMs) : 0;
    const spansTakeover = takeover && a.createdMs <= takeover.startMs && b.createdMs >= takeover.endMs;
    const allowedMs =
      INTERVAL_S * 1000 +
      TICK_MS +
      1_000 +
      startupMs +
      (spansTakeover ? takeover.endMs - takeover.startMs : 0);
    return { from: a.name, to: b.name, gapMs: b.createdMs - a.createdMs, startupMs, allowedMs };
  });
  return { list, overlaps, pairs, maxGapMs: Math.max(0, ...pairs.map((p) => p.gapMs)) };
}

beforeAll(async () => {
  ns = await freshNamespace(kc, 'takeover');
  khNs = await freshNamespace(kc, 'kh');
  void runListWatch<V1Pod>({
    kc,
    path: `/api/v1/namespaces/${ns}/pods`,
    signal: recorder.signal,
    onChange: recordPods,
  });
  for (const name of CHECKS) {
    // Reports after a second with the kh-run-uuid header: v2.7.1 and khrun both identify the run by it.
    await createCheck(
      kc,
      ns,
      name,
      {
        containers: [
          nodeContainer(
            "setTimeout(() => fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID, 'content-type': 'application/json' }, body: JSON.stringify({ OK: true, Errors: [] }) }).then((r) => console.log(r.status)), 1000);",
          ),
        ],
      },
      { runInterval: `${INTERVAL_S}s`, timeout: '20s' },
    );
  }
  daemon = await startKuberhealthyV2(kc, { namespace: khNs, replicas: 1 });
}, 240_000);

afterAll(async () => {
  ticking.abort();
  await tickLoop;
  await Promise.allSettled([...runs]);
  // v2 runs every khcheck in the cluster: no Kuberhealthy pod may outlive this file.
  await daemon?.stop();
  recorder.abort();
  await dropNamespace(kc, ns);
  await dropNamespace(kc, khNs);
}, 180_000);

describe('taking over from a running Kuberhealthy v2.7.1', () => {
  it('refuses a check Kuberhealthy runs: exit 2, the Kuberhealthy named, the command to take over', async () => {
    const states = await untilStates(
      (s) => byKuberhealthy(s) && s.spec.uuid !== '',
      'Kuberhealthy’s first runs',
    );
    const master = states[0]!.spec.AuthoritativePod;
    const result = await runKhrun(['--check', 'alpha', '-n', ns, '-o', 'json']);
    expect(result.code, result.stderr).toBe(2);
    const outcome = outcomeOf(result);
    expect(outcome.result).toBe('refused');
    expect(outcome.reason).toContain(
      `Kuberhealthy (pod ${master}, Deployment ${V2_DEPLOYMENT}) runs ${ns}/alpha`,
    );
    expect(outcome.reason).toContain('khrun takeover');
    startTickLoop();
    await waitForTick((entries) =>
      CHECKS.every((c) => entries.some((e) => e.check === `${ns}/${c}` && e.result === 'refused')),
    );
  }, 180_000);

  it('--dry-run says what would change and writes nothing (the audit log); without --yes, exit 2', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    const before = await apps.readNamespacedDeployment({ name: V2_DEPLOYMENT, namespace: khNs });
    const startedAt = new Date(Date.now() - 1_000).toISOString();
    const dryRun = await khrun(['takeover', '-n', khNs, '--dry-run', '-o', 'json']);
    const unconfirmed = await khrun(['takeover', '-n', khNs]);
    const endedAt = new Date(Date.now() + 1_000).toISOString();
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(JSON.parse(dryRun.stdout)).toMatchObject({
      dryRun: true,
      kuberhealthy: `${khNs}/${V2_DEPLOYMENT}`,
      line: 'v2',
      replicas: { from: 1, to: 0 },
      takeOver: CHECKS.map((c) => `${ns}/${c}`),
      unchanged: [],
    });
    // No terminal here (stdin is not one): the real thing needs --yes.
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stdout).toBe('');
    expect(unconfirmed.stderr).toMatch(/pass --yes to go ahead .*nothing was changed/);

    // Nothing written: no write request from this test's identity in either namespace while they ran
    // (Kuberhealthy's own writes, as its ServiceAccount, and the controllers' go on meanwhile).
    const events = [...(await auditEvents(kc, ns)), ...(await auditEvents(kc, khNs))];
    const admin = events.find((e) => e.objectRef?.name?.startsWith('audit-marker-'))?.user?.username;
    expect(admin).toBeDefined();
    // The local cluster's process kubelet writes as the admin too (pod status, tokens for pods' projected
    // volumes, a terminated pod's final delete): its requests carry its own user agent.
    const kubeletsOwn = (e: (typeof events)[number]) => e.userAgent === KUBELET_USER_AGENT;
    const writes = events.filter(
      (e) =>
        e.user?.username === admin &&
        !kubeletsOwn(e) &&
        ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb) &&
        e.requestReceivedTimestamp >= startedAt &&
        e.requestReceivedTimestamp <= endedAt,
    );
    expect(writes.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    // And what they would have touched is as it was.
    const after = await apps.readNamespacedDeployment({ name: V2_DEPLOYMENT, namespace: khNs });
    expect(after.metadata?.generation).toBe(before.metadata?.generation);
    expect(after.spec?.replicas).toBe(1);
    expect(after.metadata?.annotations?.['khrun.dev/taken-over']).toBeUndefined();
    const states = await untilStates(() => true, 'the khstates');
    for (const st of states) expect(readOwnerMarker(st)).toBeUndefined();
    expect((await daemon!.pods()).length).toBeGreaterThan(0);
  }, 120_000);

  it('takes over: Kuberhealthy at zero, its khstates khrun’s, no overlap, no gap beyond the bound', async () => {
    const clock = client.clock;
    await client.apps.listNamespacedDeployment({ namespace: khNs }); // a reading for the clock
    const startMs = clock.nowMs();
    const takeover = await khrun(['takeover', '-n', khNs, '--yes']);
    await client.apps.listNamespacedDeployment({ namespace: khNs });
    const window = { startMs, endMs: clock.nowMs() };
    expect(takeover.code, takeover.stdout + takeover.stderr).toBe(0);
    for (const c of CHECKS) expect(takeover.stdout).toContain(`${ns}/${c}: taken over`);
    expect((await daemon!.pods()).length).toBe(0);
    const deployment = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: V2_DEPLOYMENT, namespace: khNs });
    expect(deployment.spec?.replicas).toBe(0);
    // Two runs of khrun per check: the one due at once, and the next an interval later.
    const states = await untilStates(
      (s) =>
        !byKuberhealthy(s) &&
        readOwnerMarker(s)?.owner === 'khrun' &&
        parseHistory(s.metadata.annotations?.[ANNOTATION.history]).length >= 2,
      'two runs of khrun per check',
      INTERVAL_S * 1000 + 60_000,
    );
    for (const s of states) expect(readLastOutcome(s)?.kind).toBe('Succeeded');
    for (const c of CHECKS) {
      const t = timeline(c, window);
      const startups = t.pairs.map((p) => p.startupMs).filter((ms) => ms > 0);
      console.log(
        `takeover ${c}: ${t.list.length} runs, longest start-to-start ${(t.maxGapMs / 1000).toFixed(1)} s (interval ${INTERVAL_S} s), takeover ${((window.endMs - window.startMs) / 1000).toFixed(1)} s, runner start-up ${startups.map((ms) => (ms / 1000).toFixed(1)).join('/')} s`,
      );
      expect(t.overlaps, JSON.stringify(t.list)).toEqual([]);
      for (const p of t.pairs) expect(p.gapMs, JSON.stringify(p)).toBeLessThanOrEqual(p.allowedMs);
    }
  }, 240_000);

  it('hands back: khrun stops, Kuberhealthy resumes from the same khstates', async () => {
    const handback = await khrun(['handback', '-n', khNs, '--yes']);
    expect(handback.code, handback.stdout + handback.stderr).toBe(0);
    const clock = client.clock;
    const before = await untilStates(() => true, 'the khstates');
    const handedBackMs = clock.nowMs();
    for (const s of before) expect(readOwnerMarker(s)).toMatchObject({ owner: 'kuberhealthy' });
    const states = await untilStates(
      (s) => byKuberhealthy(s),
      'Kuberhealthy’s first runs after the handback',
      120_000,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await diagnose()}`);
    });
    for (const [i, s] of states.entries()) {
      // The same khstate object goes on. v2.7.1 writes a result as a new object (crd.go
      // setCheckStateResource): khrun's annotations, the owner mark among them, are gone with its first write,
      // and its spec.uuid then keeps khrun refusing the check.
      expect(s.metadata.uid).toBe(before[i]!.metadata.uid);
      expect(s.spec.OK).toBe(true);
      expect(s.metadata.annotations?.[ANNOTATION.history]).toBeUndefined();
    }
    const refusedAgain = await runKhrun(['--check', 'alpha', '-n', ns, '-o', 'json']);
    expect(refusedAgain.code).toBe(2);
    const after = tickLog.filter((t) => t.atMs > handedBackMs).flatMap((t) => t.entries);
    expect(
      after.some((e) => e.result === 'dispatched'),
      JSON.stringify(after),
    ).toBe(false);
    for (const c of CHECKS) {
      const t = timeline(c);
      console.log(
        `handback ${c}: ${t.list.length} runs, longest start-to-start ${(t.maxGapMs / 1000).toFixed(1)} s, handback took ${(handback.ms / 1000).toFixed(1)} s`,
      );
      expect(t.overlaps, JSON.stringify(t.list)).toEqual([]);
    }
  }, 240_000);
});

/** What Kuberhealthy and the checks look like, for a failure message. */
async function diagnose(): Promise<string> {
  const pods = (await daemon?.pods()) ?? [];
  const logs = await kubectl(['logs', '-n', khNs, '-l', 'app=kuberhealthy', '--tail=60']).catch(String);
  const states = await untilStates(() => true, 'the khstates', 5_000).catch(() => []);
  return [
    `kuberhealthy pods: ${pods.map((p) => `${p.metadata?.name} ${p.status?.phase}`).join(', ') || 'none'}`,
    `checker pods: ${JSON.stringify([...podRuns.values()])}`,
    `khstates: ${JSON.stringify(states.map((s) => ({ spec: s.spec, owner: readOwnerMarker(s) })))}`,
    `kuberhealthy log:\n${logs}`,
  ].join('\n');
}

/** Resolves at the first tick whose entries pass test; rejects after timeoutMs. */
function waitForTick(test: (entries: TickEntry[]) => boolean, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      tickWaiters.delete(check);
      reject(
        new Error(`no tick decided as expected within ${timeoutMs} ms: ${JSON.stringify(tickLog.at(-1))}`),
      );
    }, timeoutMs);
    const check = (entries: TickEntry[]) => {
      if (!test(entries)) return;
      clearTimeout(timer);
      tickWaiters.delete(check);
      resolve();
    };
    tickWaiters.add(check);
  });
}
