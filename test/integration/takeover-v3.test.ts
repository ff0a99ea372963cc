import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { abortableDelay } from '../../lib/core/abort.ts';
import { silentLog } from '../../lib/core/log.ts';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { stateViewOf } from '../../lib/healthcheck/state-view.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { runListWatch } from '../../lib/kube/list-watch.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import type { TickEntry } from '../../lib/schedule/tick-entry.ts';
import { readOwnerMarker } from '../../lib/takeover/owner-marker.ts';
import { runTick } from '../../lib/tick/tick.ts';
import { tickKube } from '../../lib/tick/tick-kube.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { kubectl } from './helpers/deploy.ts';
import { goCheckerV3Binary } from './helpers/go-checker-v3.ts';
import { type KhrunResult, outcomeOf, repoRoot, runKhrun } from './helpers/khrun.ts';
import {
  dropV3Finalizers,
  type KuberhealthyV3,
  startKuberhealthyV3,
  V3_FINALIZER,
} from './helpers/kuberhealthy-v3.ts';

// The real Kuberhealthy v3.0.0 controller (its own manifests) runs two HealthChecks on a short interval;
// khrun, beside it (a tick every 2 s whose dispatches are real `khrun run --healthcheck` processes), refuses
// them; `khrun takeover` and `khrun handback` move them over and back. Every checker pod of both is
// recorded from a watch, and the runs of each check must neither overlap nor leave a gap longer than the
// bound of the v2 test (takeover.test.ts): interval + tick + 1 s + the runner's start-up (+ the takeover).

const kc = adminKubeConfig();
/** The test's one client object: its clock, fed by the tick's requests here, times the dispatches and windows. */
const client = kubeClient(kc);
const custom = kc.makeApiClient(CustomObjectsApi);
const INTERVAL_S = 20;
const TICK_MS = 2_000;
const CHECKS = ['alpha', 'bravo'];
let ns: string;
let khNs: string;
let v3: KuberhealthyV3 | undefined;

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

/** v3's pods and khrun's for HealthChecks carry the same v3 labels: `healthcheck` and `kh-run-uuid`. */
function recordPods(items: ReadonlyMap<string, V1Pod>) {
  for (const pod of items.values()) {
    const runId = pod.metadata?.labels?.['kh-run-uuid'];
    const check = pod.metadata?.labels?.healthcheck;
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

const ticking = new AbortController();
const runs = new Set<Promise<KhrunResult>>();
const tickLog: { atMs: number; entries: TickEntry[] }[] = [];
const dispatches: { check: string; atMs: number }[] = [];
const runnerResults: { code: number | null; out: string; err: string }[] = [];
const tickWaiters = new Set<(entries: TickEntry[]) => void>();
let tickLoop: Promise<void> | undefined;

function startTickLoop() {
  const clock = client.clock;
  const dispatcher: Dispatcher = {
    runsHealthChecks: true,
    refFor: (check, nowMs) => `test-${check.name}-${nowMs}`,
    async dispatch(check) {
      dispatches.push({ check: check.name, atMs: clock.nowMs() });
      const run = runKhrun(['--healthcheck', check.name, '-n', check.namespace, '-o', 'json']);
      runs.add(run);
      void run.then((r) =>
        runnerResults.push({ code: r.code, out: r.stdout.slice(-300), err: r.stderr.slice(-300) }),
      );
      void run.finally(() => runs.delete(run));
    },
  };
  tickLoop = (async () => {
    while (!ticking.signal.aborted) {
      const entries = await runTick(
        { kube: tickKube(client), dispatcher, clock, log: silentLog },
        {
          scope: { namespaces: [ns] },
          identity: 'takeover-v3-test-tick',
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

/** Waits, by watch, until decide holds for the HealthChecks of every check. */
function untilChecks(decide: (hc: HealthCheck) => boolean, description: string, timeoutMs = 120_000) {
  return waitFor<HealthCheck, HealthCheck[]>(kc, {
    path: `/apis/${HC_GROUP}/${HC_VERSION}/namespaces/${ns}/${HC_PLURAL}`,
    decide: (items) => {
      const hcs = CHECKS.map((c) => items.get(`${ns}/${c}`));
      return hcs.every((hc) => hc && decide(hc)) ? (hcs as HealthCheck[]) : undefined;
    },
    timeoutMs,
    description,
  }).catch(async (error: unknown) => {
    throw new Error(`${String(error)}\n${await diagnose()}`);
  });
}

/** What v3, khrun's tick and the HealthChecks look like, for a failure message. */
async function diagnose(): Promise<string> {
  const list = (await custom.listNamespacedCustomObject({
    group: HC_GROUP,
    version: HC_VERSION,
    plural: HC_PLURAL,
    namespace: ns,
  })) as { items: HealthCheck[] };
  const logs = await kubectl(['logs', '-n', khNs, '-l', 'app=kuberhealthy', '--tail=40']).catch(String);
  return [
    `healthchecks: ${JSON.stringify(list.items.map((hc) => ({ metadata: hc.metadata, status: hc.status })))}`,
    `checker pods: ${JSON.stringify([...podRuns.values()])}`,
    `last ticks: ${JSON.stringify(tickLog.slice(-2))}`,
    `runner results: ${JSON.stringify(runnerResults.slice(-4))}`,
    `kuberhealthy log:\n${logs}`,
  ].join('\n');
}

const runsOf = (hc: HealthCheck) => (hc.status?.successCount ?? 0) + (hc.status?.failureCount ?? 0);

/** The runs of a check in start order, their overlaps, and each gap against its bound (see the top). */
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
  let checker: string;
  [ns, khNs, checker] = await Promise.all([
    freshNamespace(kc, 'takeover3'),
    freshNamespace(kc, 'kh3t'),
    goCheckerV3Binary(),
  ]);
  void runListWatch<V1Pod>({
    kc,
    path: `/api/v1/namespaces/${ns}/pods`,
    signal: recorder.signal,
    onChange: recordPods,
  });
  // v3 first, then its HealthChecks (as the side-by-side test does): its informer starts each at once.
  v3 = await startKuberhealthyV3(kc, khNs);
  for (const name of CHECKS) {
    const body: HealthCheck = {
      apiVersion: HC_API_VERSION,
      kind: 'HealthCheck',
      metadata: { name, namespace: ns },
      spec: {
        runInterval: `${INTERVAL_S}s`,
        timeout: '10s',
        podSpec: {
          spec: {
            containers: [{ name: 'check', image: 'example/v3-check:1', command: [checker, 'success'] }],
            restartPolicy: 'Never',
          },
        },
      },
    };
    await custom.createNamespacedCustomObject({
      group: HC_GROUP,
      version: HC_VERSION,
      plural: HC_PLURAL,
      namespace: ns,
      body,
    });
  }
}, 20 * 60_000);

afterAll(async () => {
  ticking.abort();
  await tickLoop;
  await Promise.allSettled([...runs]);
  // v3.0.0 runs every HealthCheck in the cluster: no controller may outlive this file.
  await v3?.stop();
  // A stopped v3 never removes its finalizer, which would hold the namespace's deletion forever.
  if (ns) await dropV3Finalizers(kc, ns).catch(() => undefined);
  recorder.abort();
  await Promise.all([ns, khNs].filter(Boolean).map((n) => dropNamespace(kc, n)));
}, 180_000);

describe('taking over from a running Kuberhealthy v3.0.0', () => {
  it('refuses a HealthCheck v3 runs: exit 2, the evidence named, the command to take over', async () => {
    // v3.0.0 adds its finalizer with a plain update that can lose to its own status write (409, never
    // retried): its first runs are the evidence to wait for; the refusal names whichever evidence it saw.
    await untilChecks((hc) => runsOf(hc) > 0, 'v3’s first runs', 120_000);
    const result = await runKhrun(['--healthcheck', 'alpha', '-n', ns, '-o', 'json']);
    expect(result.code, result.stderr).toBe(2);
    const outcome = outcomeOf(result);
    expect(outcome.result).toBe('refused');
    expect(outcome.reason).toMatch(
      new RegExp(
        `Kuberhealthy v3 runs ${ns}/alpha \\((its finalizer ${V3_FINALIZER.replaceAll('.', '\\.')} is on|the HealthCheck's status holds results khrun did not record)`,
      ),
    );
    expect(outcome.reason).toContain('khrun takeover');
    startTickLoop();
    await waitForTick((entries) =>
      CHECKS.every((c) =>
        entries.some((e) => e.check === `healthcheck/${ns}/${c}` && e.result === 'refused'),
      ),
    );
  }, 180_000);

  it('takes over: v3 at zero, its HealthChecks khrun’s, no overlap, no gap beyond the bound', async () => {
    const clock = client.clock;
    const { apps } = client;
    // What would change first: the plan names this v3 and its HealthChecks, and changes nothing.
    const plan = await khrun(['takeover', '-n', khNs, '--dry-run', '-o', 'json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({
      dryRun: true,
      line: 'v3',
      takeOver: CHECKS.map((c) => `${ns}/${c}`),
    });
    expect(
      (await apps.listNamespacedDeployment({ namespace: khNs })).items[0]?.spec?.replicas,
    ).toBeGreaterThan(0);
    await apps.listNamespacedDeployment({ namespace: khNs }); // a reading for the clock
    const startMs = clock.nowMs();
    const before = new Map(
      (await untilChecks(() => true, 'the HealthChecks')).map((hc) => [hc.metadata.name, hc]),
    );
    const takeover = await khrun(['takeover', '-n', khNs, '-o', 'json', '--yes']);
    await apps.listNamespacedDeployment({ namespace: khNs });
    const window = { startMs, endMs: clock.nowMs() };
    expect(takeover.code, takeover.stdout + takeover.stderr).toBe(0);
    const summary = JSON.parse(takeover.stdout) as { line: string; adopted: string[]; closedRuns: string[] };
    expect(summary.line).toBe('v3');
    expect(summary.adopted).toEqual(CHECKS.map((c) => `${ns}/${c}`));
    const deployment = (await apps.listNamespacedDeployment({ namespace: khNs })).items[0]!;
    expect(deployment.spec?.replicas).toBe(0);
    // Two runs of khrun per check after the takeover, v3's history (its counts) carried on.
    const hcs = await untilChecks(
      (hc) =>
        readOwnerMarker(stateViewOf(hc))?.owner === 'khrun' &&
        runsOf(hc) >= runsOf(before.get(hc.metadata.name)!) + 2 &&
        hc.status?.currentUUID === '',
      'two runs of khrun per HealthCheck',
      2 * INTERVAL_S * 1000 + 60_000,
    );
    for (const hc of hcs) {
      expect(hc.status?.ok).toBe(true);
      expect(hc.metadata.uid).toBe(before.get(hc.metadata.name)!.metadata.uid);
    }
    for (const c of CHECKS) {
      const t = timeline(c, window);
      console.log(
        `takeover v3 ${c}: ${t.list.length} runs, longest start-to-start ${(t.maxGapMs / 1000).toFixed(1)} s (interval ${INTERVAL_S} s), takeover ${((window.endMs - window.startMs) / 1000).toFixed(1)} s, run in flight closed: ${summary.closedRuns.includes(`${ns}/${c}`)}`,
      );
      expect(t.overlaps, JSON.stringify(t.list)).toEqual([]);
      for (const p of t.pairs) expect(p.gapMs, JSON.stringify(p)).toBeLessThanOrEqual(p.allowedMs);
    }
  }, 240_000);

  it('hands back: khrun stops, v3 resumes on the same HealthChecks', async () => {
    const plan = await khrun(['handback', '-n', khNs, '--dry-run', '-o', 'json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({
      dryRun: true,
      handBack: CHECKS.map((c) => `${ns}/${c}`),
    });
    const handback = await khrun(['handback', '-n', khNs, '--yes']);
    expect(handback.code, handback.stdout + handback.stderr).toBe(0);
    const clock = client.clock;
    const marked = await untilChecks(() => true, 'the HealthChecks');
    const handedBackMs = clock.nowMs();
    for (const hc of marked)
      expect(readOwnerMarker(stateViewOf(hc))).toMatchObject({ owner: 'kuberhealthy' });
    const counts = new Map(marked.map((hc) => [hc.metadata.name, runsOf(hc)]));
    // v3 starts every HealthCheck its informer adds at once; khrun sends none, so these runs are v3's.
    await untilChecks(
      (hc) => runsOf(hc) > counts.get(hc.metadata.name)! && hc.status?.currentUUID === '',
      'v3’s first runs after the handback',
      90_000,
    );
    const refusedAgain = await runKhrun(['--healthcheck', 'alpha', '-n', ns, '-o', 'json']);
    expect(refusedAgain.code).toBe(2);
    expect(outcomeOf(refusedAgain).reason).toContain('handed back');
    const after = tickLog.filter((t) => t.atMs > handedBackMs).flatMap((t) => t.entries);
    expect(
      after.some((e) => e.result === 'dispatched'),
      JSON.stringify(after),
    ).toBe(false);
    for (const c of CHECKS) {
      const t = timeline(c);
      console.log(
        `handback v3 ${c}: ${t.list.length} runs, longest start-to-start ${(t.maxGapMs / 1000).toFixed(1)} s, handback took ${(handback.ms / 1000).toFixed(1)} s`,
      );
      expect(t.overlaps, JSON.stringify(t.list)).toEqual([]);
    }
  }, 240_000);
});

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
