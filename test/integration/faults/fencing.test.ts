import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CHECK_NAME_LABEL, RUN_ID_LABEL } from '../../../lib/check/pod-builder.ts';
import { isRunPod } from '../../../lib/check/run-label.ts';
import { runListWatch } from '../../../lib/kube/list-watch.ts';
import { type ActiveRun, readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck } from '../../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { startWriteOutageProxy, type WriteOutageProxy } from './helpers/api-write-outage.ts';
import { checkerContainer, type Gate, startGate } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms } from './helpers/fault-table.ts';
import {
  podsLeft,
  recordedOutcomes,
  stateProblems,
  waitForCheckPod,
  waitForState,
} from './helpers/invariants.ts';
import {
  logLines,
  type Runner,
  type RunnerExit,
  resultOf,
  startRunner,
  stopRunner,
} from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Fencing and adoption (issue 11 points 1 and 3), on the real local cluster with real `khrun run`
// processes. A runner whose API writes fail for longer than its lease loses its run to a second invocation:
// the adopter must keep the first runner's pod (its report can still land), the first runner must step
// down (no outcome, no pod removed) and keep its report endpoint up until the report landed; the run is
// recorded exactly once. And an adopter that replaces the pod of a runner that died must get the
// replacement's report recorded while the old pod still terminates.

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const hostIp = inject('hostIp');
const LEASE_SECONDS = 3;
const LEASE = { KHRUN_LEASE_SECONDS: String(LEASE_SECONDS) };
/** The write outage lasts this long: four leases, so it is longer than the lease by any reading. */
const OUTAGE_MS = 4 * LEASE_SECONDS * 1000;
let ns: string;
let gate: Gate;
let tally: ReportTally;
let proxy: WriteOutageProxy;
const started: Runner[] = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-fence');
  gate = await startGate(hostIp);
  tally = await startReportTally(kc, hostIp);
  proxy = await startWriteOutageProxy({
    kubeconfigPath: inject('kubeconfigPath'),
    dir: inject('clusterDir'),
  });
});
afterAll(async () => {
  for (const r of started) await stopRunner(r);
  await gate?.close();
  await tally?.close();
  await proxy?.close();
  await dropNamespace(kc, ns);
});

function run(check: string, env: Record<string, string> = {}, kubeconfigPath?: string): Runner {
  const target = { kubeconfigPath: kubeconfigPath ?? inject('kubeconfigPath'), hostIp };
  const runner = startRunner(check, ns, { ...LEASE, ...env }, target);
  started.push(runner);
  return runner;
}

/** Resolves at an absolute time (a lease's end as the khstate says, the end of a fault window). */
function until(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now()) + 50));
}

/** Every checker pod of the check that ever existed while the test watched, by uid. */
function collectPods(check: string) {
  const seen = new Map<string, V1Pod>();
  const stop = new AbortController();
  const watching = runListWatch<V1Pod>({
    kc,
    path: `/api/v1/namespaces/${ns}/pods`,
    labelSelector: `${CHECK_NAME_LABEL}=${check}`,
    signal: stop.signal,
    onChange: (items) => {
      for (const pod of items.values()) seen.set(pod.metadata?.uid ?? '', pod);
    },
  });
  return {
    pods: () => [...seen.values()],
    stop: async () => {
      stop.abort();
      await watching.catch(() => undefined);
    },
  };
}

/** Both runners' ends, bounded: a runner that never ends fails the test rather than hanging it. */
async function exits(runners: Runner[], timeoutMs: number): Promise<RunnerExit[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `runners still running after ${timeoutMs} ms:\n${runners.map((r) => r.output().slice(-3000)).join('\n---\n')}`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([Promise.all(runners.map((r) => r.done)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const describeExit = (e: RunnerExit) => `exit ${e.code}\n${e.stdout.slice(-4000)}\n${e.stderr.slice(-2000)}`;

describe('fencing: API writes fail for longer than the lease while a run waits', () => {
  it('the adopter keeps the first pod, its report is recorded once, the first runner steps down', async () => {
    const row = faultScenario('fencing: API writes fail for longer than the lease while the run waits');
    const check = 'write-outage';
    await createCheck(
      kc,
      ns,
      check,
      { containers: [checkerContainer({ gateUrl: gate.waitUrl(check), notifyUrl: tally.url(check) })] },
      { timeout: '2m' },
    );
    const pods = collectPods(check);
    try {
      // The first runner talks to the API server through the proxy; its pod waits at the gate.
      const first = run(check, {}, proxy.kubeconfigPath);
      const pod = await waitForCheckPod(
        kc,
        ns,
        check,
        (p) => p.status?.phase === 'Running',
        'first pod running',
      );
      const before = readActiveRun(await readState(kc, ns, check)) as ActiveRun;
      expect(before.uuid).toBe(pod.metadata?.labels?.[RUN_ID_LABEL]);

      proxy.failWrites();
      const outageFromMs = Date.now();
      // The lease the first runner holds as the outage begins; it cannot renew it now.
      const held = readActiveRun(await readState(kc, ns, check)) as ActiveRun;
      await until(held.leaseUntilMs);
      const second = run(check);
      const adopted = await waitForState(
        kc,
        ns,
        check,
        (s) => {
          const r = readActiveRun(s);
          return r && r.uuid === held.uuid && r.leaseUntilMs > held.leaseUntilMs ? r : undefined;
        },
        'the run adopted by the second runner',
        30_000,
      );
      // The report goes out during the outage, to the endpoint the pod was created with (the first runner's).
      gate.open(check);
      await until(outageFromMs + OUTAGE_MS);
      proxy.restoreWrites();
      const outageMs = Date.now() - outageFromMs;

      const [firstExit, secondExit] = (await exits([first, second], 90_000)) as [RunnerExit, RunnerExit];
      const firstResult = resultOf(firstExit);
      const secondResult = resultOf(secondExit);
      const state = await readState(kc, ns, check);
      const ofRun = pods.pods().filter((p) => isRunPod(p, held.uuid));
      const detail = `first: ${describeExit(firstExit)}\n---\nsecond: ${describeExit(secondExit)}`;
      const live = (
        await core.listNamespacedPod({ namespace: ns, labelSelector: `${CHECK_NAME_LABEL}=${check}` })
      ).items.filter(
        (p) => !p.metadata?.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
      );
      const reported = tally.runs(check);
      const recorded = recordedOf(reported, [readLastOutcome(state)?.uuid]);
      await row.record({
        fault: `fencing: API writes fail for longer than the lease (${ms(outageMs)} outage of writes through a proxy, ${LEASE_SECONDS} s lease) while the run waits; a second \`khrun run\` adopts it during the outage`,
        runs: 1,
        outcome: `${ofRun.length} pod for the run (kept by the adopter); adopter: ${String(secondResult?.result)} ${String(secondResult?.kind)}; first runner: ${String(firstResult?.result)}; ${recordedOutcomes(state)} outcome recorded; ${live.length} live pods left; ${proxy.refused.length} writes refused by the proxy`,
        reported: reported.length,
        recorded,
      });

      expect(
        ofRun.map((p) => p.metadata?.name),
        `one pod for the run, never a second\n${detail}`,
      ).toHaveLength(1);
      expect(secondResult, detail).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
      expect(firstResult, detail).toMatchObject({ result: 'superseded' });
      // Nothing silent: the first runner said its lease ran out, then that it stepped down; the adopter
      // said why it kept the pod (its endpoint, the first runner's, still answered).
      const said = (exit: RunnerExit) => logLines(`${exit.stdout}\n${exit.stderr}`);
      const firstSaid = said(firstExit).map((l) => l.message);
      expect(firstSaid, detail).toContain(
        'lease expired while renewals fail: another invocation may adopt the run',
      );
      expect(firstSaid, detail).toContain('stepped down: the run is no longer ours');
      const kept = said(secondExit).find(
        (l) => l.message === "kept the adopted run's pod: its report may still land",
      );
      expect(kept, detail).toMatchObject({ endpoint: 'alive' });
      expect(stateProblems(state, ns)).toEqual([]);
      expect(readLastOutcome(state)?.uuid).toBe(held.uuid);
      expect(recordedOutcomes(state), 'the run recorded exactly once').toBe(1);
      expect(adopted.uuid).toBe(held.uuid);
      expect(live, 'no live pod left').toEqual([]);
      expect(recorded).toBe(reported.length);
    } finally {
      await pods.stop();
    }
  }, 180_000);
});

/**
 * A checker that keeps running when told to stop (SIGTERM trapped, a long grace period) and, once told,
 * never reports: the old pod of an adopted run that lingers while terminating.
 */
function lingeringChecker(check: string) {
  const container = checkerContainer({ gateUrl: gate.waitUrl(check), notifyUrl: tally.url(check) });
  const trap = `process.on('SIGTERM', () => {
  console.log('SIGTERM: still running, reporting nothing');
  setInterval(() => {}, 60_000);
  const f = globalThis.fetch;
  globalThis.fetch = (url, o) => (String(url) === process.env.CHECKER_GATE ? f(url, o) : new Promise(() => {}));
});
`;
  const [node = process.execPath, flag = '-e', script = ''] = container.command ?? [];
  return { ...container, command: [node, flag, trap + script] };
}

describe('adoption: the replaced pod of a dead runner still terminates when the replacement reports', () => {
  it('the replacement pod’s report is recorded; the old pod was asked to go', async () => {
    const row = faultScenario(
      'adoption: the replaced pod of a dead runner still terminates when the replacement reports',
    );
    const check = 'adopt-terminating';
    await createCheck(
      kc,
      ns,
      check,
      { containers: [lingeringChecker(check)], terminationGracePeriodSeconds: 60 },
      { timeout: '2m' },
    );
    const pods = collectPods(check);
    try {
      // The first runner dies right after creating its pod: nothing listens at that pod's endpoint any more.
      const killed = await run(check, { KHRUN_FAILPOINT_KILL_AT: 'pod created' }).done;
      expect(killed.signal, describeExit(killed)).toBe('SIGKILL');
      const orphan = readActiveRun(await readState(kc, ns, check)) as ActiveRun;
      const oldPod = await waitForCheckPod(
        kc,
        ns,
        check,
        (p) => p.status?.phase === 'Running',
        'old pod running',
      );
      await until(orphan.leaseUntilMs);

      const adopter = run(check);
      const oldUid = oldPod.metadata?.uid;
      const replacement = await waitForCheckPod(
        kc,
        ns,
        check,
        (p) =>
          p.metadata?.uid !== oldUid &&
          isRunPod(p, orphan.uuid) &&
          p.status?.phase === 'Running' &&
          !p.metadata?.deletionTimestamp,
        'a replacement pod of the same run, running',
      );
      const old = await core.readNamespacedPod({ namespace: ns, name: oldPod.metadata?.name ?? '' });
      expect(old.metadata?.uid).toBe(oldUid);
      expect(old.metadata?.deletionTimestamp, 'the old pod is terminating').toBeTruthy();

      // Now the replacement reports (the old pod, told to stop, reports nothing but keeps running).
      gate.open(check);
      const exit = (await exits([adopter], 90_000))[0] as RunnerExit;
      const result = resultOf(exit);
      const state = await readState(kc, ns, check);
      const stillThere = (
        await core.listNamespacedPod({ namespace: ns, labelSelector: `${CHECK_NAME_LABEL}=${check}` })
      ).items;

      const reported = tally.runs(check);
      const recorded = recordedOf(reported, [readLastOutcome(state)?.uuid]);
      const oldStill = stillThere.find((p) => p.metadata?.uid === oldUid);
      await row.record({
        fault: `adoption: the runner SIGKILLed after creating its pod; the adopter replaces that pod (nothing listens at its endpoint), which traps SIGTERM and keeps terminating (60 s grace) while the replacement ${replacement.metadata?.name} reports`,
        runs: 1,
        outcome: `adopter: ${String(result?.result)} ${String(result?.kind)}; the old pod ${oldStill?.metadata?.deletionTimestamp ? 'still terminating' : 'not terminating'} when the outcome was recorded; ${recordedOutcomes(state)} outcome recorded`,
        reported: reported.length,
        recorded,
      });

      expect(result, describeExit(exit)).toMatchObject({
        result: 'recorded',
        kind: 'Succeeded',
        adopted: true,
      });
      expect(stateProblems(state, ns)).toEqual([]);
      expect(readLastOutcome(state)?.uuid).toBe(orphan.uuid);
      expect(recordedOutcomes(state)).toBe(1);
      // The old pod outlived the report (it was terminating all along), and every pod of the run was asked to go.
      expect(oldStill?.metadata?.deletionTimestamp).toBeTruthy();
      expect(
        stillThere.filter(
          (p) => !p.metadata?.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
        ),
      ).toEqual([]);
      expect(pods.pods().filter((p) => isRunPod(p, orphan.uuid))).toHaveLength(2);
    } finally {
      await pods.stop();
      // The lingering pod would hold its 60 s grace: the test, not khrun, ends it now.
      const left = (
        await core.listNamespacedPod({ namespace: ns, labelSelector: `${CHECK_NAME_LABEL}=${check}` })
      ).items;
      for (const p of left)
        await core
          .deleteNamespacedPod({ namespace: ns, name: p.metadata?.name ?? '', gracePeriodSeconds: 0 })
          .catch(() => undefined);
    }
  }, 180_000);
});

describe('adoption: a khcheck that became invalid while its run’s runner was dead', () => {
  it('the next invocation closes the run with the validation error and removes its pod', async () => {
    const fault =
      'adoption: the khcheck became invalid (timeout "5 min") while its run’s runner was dead (SIGKILLed after creating the pod)';
    const row = faultScenario(fault);
    const check = 'invalid-orphan';
    await createCheck(kc, ns, check, { containers: [checkerContainer({ gateUrl: gate.waitUrl(check) })] });
    const killed = await run(check, { KHRUN_FAILPOINT_KILL_AT: 'pod created' }).done;
    expect(killed.signal, describeExit(killed)).toBe('SIGKILL');
    const orphan = readActiveRun(await readState(kc, ns, check)) as ActiveRun;
    await waitForCheckPod(
      kc,
      ns,
      check,
      (p) => p.status?.phase === 'Running',
      'the orphaned run’s pod running',
    );

    // The khcheck becomes invalid (a timeout Go cannot parse) while nobody holds its run.
    const custom = kc.makeApiClient(CustomObjectsApi);
    const ref = { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL, namespace: ns, name: check };
    const source = (await custom.getNamespacedCustomObject(ref)) as KhCheck;
    await custom.replaceNamespacedCustomObject({
      ...ref,
      body: { ...source, spec: { ...source.spec, timeout: '5 min' } },
    });
    await until(orphan.leaseUntilMs);

    const exit = await run(check).done;
    const result = resultOf(exit);
    const state = await readState(kc, ns, check);
    const { pods, live } = await podsLeft(kc, ns, check);
    const closedRecorded = readLastOutcome(state)?.uuid === orphan.uuid ? 1 : 0;
    await row.record({
      fault,
      runs: 1,
      outcome: `the next invocation recorded ${String(result?.kind)} for that run (${closedRecorded} of 1 orphaned run closed), ${readActiveRun(state) ? 'a run still active' : 'no run left active'}; ${pods.length} pod(s) left, ${live.length} live`,
      // No checker reported (it waited at its gate): the run's outcome is the validation error.
      reported: 0,
      recorded: 0,
    });

    expect(result, describeExit(exit)).toMatchObject({ result: 'recorded', kind: 'ExecutionError' });
    expect(stateProblems(state, ns)).toEqual([]);
    expect(readLastOutcome(state)).toMatchObject({ uuid: orphan.uuid, kind: 'ExecutionError' });
    expect(state?.spec.Errors[0]).toMatch(/spec\.timeout "5 min"/);
    expect(live, 'no live pod left').toEqual([]);
  }, 120_000);
});
