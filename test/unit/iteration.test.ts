import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KH_ENV, podNameFor } from '../../lib/check/pod-builder.ts';
import { acceptReport } from '../../lib/report/accept-report.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import type { EndpointState } from '../../lib/run/endpoint-probe.ts';
import { CheckNotFoundError } from '../../lib/run/errors.ts';
import {
  ITERATION_DEFAULTS,
  type IterationConfig,
  type IterationResult,
  runIteration,
} from '../../lib/run/iteration.ts';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readAcceptedReport,
  readActiveRun,
  readConsecutiveFailures,
  readLastOutcome,
} from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { FakeApiError, FakeKube } from './fakes/fake-kube.ts';

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2024, 2, 5, 10, 20, 30, 0);
const URL = 'http://khrun-report.kuberhealthy.svc:8080/externalCheckStatus';
/** The endpoint of another runner's process, which an adopted pod reports to. */
const DEAD_URL = 'http://10.0.0.9:8080/externalCheckStatus';
const PREFIX = `Check execution error: ${NS}/${NAME}: `;
const UUIDS = [
  '11111111-1111-4111-8111-111111111111',
  '22222222-2222-4222-8222-222222222222',
  '33333333-3333-4333-8333-333333333333',
];
const U1 = UUIDS[0] as string;
const EARLIER = '99999999-9999-4999-8999-999999999999';
const POD1 = podNameFor(NAME, T0);
/** This invocation's fencing token, as runCheck makes one per invocation. */
const HOLDER = 'runner-a/invocation-1';

function khcheck(spec: Partial<KhCheck['spec']> = {}): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: NAME, namespace: NS, uid: 'uid-dns' },
    spec: {
      runInterval: '10m',
      timeout: '5m',
      podSpec: { containers: [{ name: 'main', image: 'ghcr.io/kuberhealthy/dns-check:v1.0.0' }] },
      ...spec,
    },
  };
}

function harness(opts: { check?: KhCheck | null } = {}) {
  const kube = new FakeKube();
  if (opts.check !== null) kube.putCheck(opts.check ?? khcheck());
  const ids = [...UUIDS];
  const logs: { level: string; message: string; extra?: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (message: string, extra?: Record<string, unknown>): void => {
      logs.push({ level, message, ...(extra ? { extra } : {}) });
    };
  /** What the adopter's endpoint probe answers, per URL (unknown unless set), and what it was asked. */
  const endpoints = new Map<string, EndpointState>();
  const probed: string[] = [];
  const deps: AcquireDeps = {
    endpoints: {
      probe: async (url) => {
        probed.push(url);
        return endpoints.get(url) ?? 'unknown';
      },
    },
    kube,
    clock: { nowMs: () => Date.now() },
    ids: {
      runUuid: () => {
        const next = ids.shift();
        if (!next) throw new Error('out of run UUIDs');
        return next;
      },
    },
    log: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') },
  };
  const controller = new AbortController();
  const cfg = (over: Partial<IterationConfig> = {}): IterationConfig => ({
    namespace: NS,
    checkName: NAME,
    runner: 'runner-a',
    holder: HOLDER,
    reportingUrl: URL,
    signal: controller.signal,
    ...over,
  });
  return { kube, deps, controller, cfg, logs, endpoints, probed };
}

const stateNow = (kube: FakeKube): KhState => {
  const state = kube.state(NS, NAME);
  if (!state) throw new Error('no khstate');
  return state;
};

/** A khstate holding a run, as another runner left it. */
function stateWithRun(run: ActiveRun, extra: Record<string, string> = {}): KhState {
  const state = newKhState(NAME, NS);
  state.spec = {
    ...state.spec,
    OK: true,
    RunDuration: '2s',
    LastRun: '2024-03-05T10:10:00Z',
    AuthoritativePod: 'runner-old',
    uuid: run.uuid,
  };
  state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(run), ...extra };
  return state;
}

/** A checker pod as an earlier runner created it, reporting to reportingUrl. */
function checkerPodOf(run: ActiveRun, phase = 'Running', reportingUrl = URL): V1Pod {
  return {
    metadata: {
      name: run.pod,
      namespace: NS,
      labels: { 'kuberhealthy-run-id': run.uuid, 'kuberhealthy-check-name': NAME, app: 'kuberhealthy-check' },
      annotations: { 'comcast.github.io/check-name': NAME },
      uid: `uid-${run.pod}-${run.uuid.slice(0, 4)}`,
      ownerReferences: [
        { apiVersion: 'comcast.github.io/v1', kind: 'KuberhealthyCheck', name: NAME, uid: 'uid-dns' },
      ],
      creationTimestamp: new Date(run.startedAtMs),
    },
    spec: {
      nodeName: 'node-2',
      containers: [
        {
          name: 'main',
          image: 'img',
          env: [
            { name: KH_ENV.reportingUrl, value: reportingUrl },
            { name: KH_ENV.runUuid, value: run.uuid },
          ],
        },
      ],
    },
    status: { phase },
  };
}

const exited = (exitCode: number): V1ContainerStatus => ({
  name: 'main',
  image: 'img',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error' } },
});
const finished = (exitCode: number): V1PodStatus => ({
  phase: exitCode === 0 ? 'Succeeded' : 'Failed',
  containerStatuses: [exited(exitCode)],
});

/** What the report endpoint does for a checker pod: identify it by its KH_RUN_UUID and gate the write. */
async function reportFrom(kube: FakeKube, podName: string, report: { OK: boolean; Errors: string[] }) {
  const pod = kube.pods.get(`${NS}/${podName}`);
  const uuid = pod?.spec?.containers[0]?.env?.find((e) => e.name === KH_ENV.runUuid)?.value;
  if (!uuid) throw new Error(`no checker pod ${podName}`);
  const state = await kube.readState(NS, NAME);
  const decision = acceptReport({
    state,
    checkRef: `${NS}/${NAME}`,
    uuid,
    report,
    pod: podName,
    server: 'khrun-report-0',
    nowMs: Date.now(),
  });
  if (!decision.ok) throw new Error(decision.reason);
  await kube.replaceState(decision.next);
}

/** Count of writes that recorded an outcome of this run (the claim released in the same write). */
const recordWrites = (kube: FakeKube, uuid: string) =>
  kube.stateHistory.filter((s, i) => {
    const before = kube.stateHistory[i - 1];
    return (
      readActiveRun(before ?? null)?.uuid === uuid && !readActiveRun(s) && readLastOutcome(s)?.uuid === uuid
    );
  }).length;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  vi.setSystemTime(T0);
});

afterEach(() => {
  vi.useRealTimers();
});

describe('runIteration: the khcheck', () => {
  it('throws CheckNotFoundError for a missing khcheck and writes nothing', async () => {
    const h = harness({ check: null });
    const error = await runIteration(h.deps, h.cfg()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckNotFoundError);
    expect(error).toMatchObject({ namespace: NS, checkName: NAME });
    expect(h.kube.stateHistory).toEqual([]);
    expect(h.kube.calls.createPod).toBe(0);
  });

  it.each([
    { name: 'no khstate yet', existing: undefined, failures: '1' },
    { name: 'an earlier khstate with 2 failures', existing: '2', failures: '3' },
  ])('records an invalid khcheck as an execution error ($name)', async ({ existing, failures }) => {
    const h = harness({ check: khcheck({ timeout: '5 min' }) });
    if (existing) {
      const old = newKhState(NAME, NS);
      old.metadata.annotations = { [ANNOTATION.consecutiveFailures]: existing, 'example.com/keep': 'me' };
      h.kube.putState(old);
    }
    const reason =
      'spec.timeout "5 min" is not a Go duration (time: unknown unit " min" in duration "5 min"); use a value such as "5m" or "90s"';
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toEqual({
      kind: 'recorded',
      runUuid: '',
      adopted: false,
      outcome: { kind: 'ExecutionError', ok: false, errors: [`${PREFIX}${reason}`], node: '', durationMs: 0 },
    });
    const state = stateNow(h.kube);
    expect(state.spec).toEqual({
      OK: false,
      Errors: [`${PREFIX}${reason}`],
      RunDuration: '0s',
      Namespace: NS,
      Node: '',
      LastRun: '2024-03-05T10:20:30Z',
      AuthoritativePod: 'runner-a',
      uuid: '',
    });
    expect(state.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe(failures);
    if (existing) expect(state.metadata.annotations?.['example.com/keep']).toBe('me');
    expect(h.kube.calls.createPod).toBe(0);
  });
});

describe('runIteration: a run from claim to record', () => {
  it('creates the checker pod, waits for its report and records the outcome once', async () => {
    const h = harness();
    const running = runIteration(h.deps, h.cfg());

    await h.kube.until(() => h.kube.createdPods.length === 1);
    const pod = h.kube.createdPods[0] as V1Pod;
    // spec.uuid and the run were written before the pod existed.
    const claimed = stateNow(h.kube);
    expect(claimed.spec.uuid).toBe(U1);
    expect(readActiveRun(claimed)).toEqual({
      uuid: U1,
      startedAtMs: T0,
      deadlineMs: T0 + 300_000,
      pod: POD1,
      runner: 'runner-a',
      holder: HOLDER,
      leaseUntilMs: T0 + ITERATION_DEFAULTS.leaseMs,
    });
    expect(pod.metadata?.name).toBe('dns-1709634030');
    expect(pod.metadata?.namespace).toBe(NS);
    expect(pod.metadata?.labels).toEqual({
      'kuberhealthy-run-id': U1,
      'kuberhealthy-check-name': NAME,
      app: 'kuberhealthy-check',
    });
    expect(pod.metadata?.annotations).toEqual({ 'comcast.github.io/check-name': NAME });
    expect(pod.spec?.restartPolicy).toBe('Never');
    expect(pod.spec?.containers[0]?.env).toEqual([
      { name: 'KH_REPORTING_URL', value: URL },
      { name: 'KH_RUN_UUID', value: U1 },
      { name: 'KH_CHECK_RUN_DEADLINE', value: String((T0 + 300_000) / 1000) },
      { name: 'KH_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ]);

    h.kube.bindPod(NS, POD1, 'node-1');
    h.kube.setPodStatus(NS, POD1, { phase: 'Running' });
    await vi.advanceTimersByTimeAsync(1_500);
    await reportFrom(h.kube, POD1, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, POD1, finished(0));

    const result = await running;
    expect(result).toEqual({
      kind: 'recorded',
      runUuid: U1,
      adopted: false,
      outcome: {
        kind: 'Succeeded',
        ok: true,
        errors: [],
        node: 'node-1',
        durationMs: 1_500,
        reportedAtMs: T0 + 1_500,
      },
    });
    const state = stateNow(h.kube);
    expect(state.spec).toEqual({
      OK: true,
      Errors: [],
      RunDuration: '1.5s',
      Namespace: NS,
      Node: 'node-1',
      LastRun: '2024-03-05T10:20:31Z',
      AuthoritativePod: 'runner-a',
      uuid: U1,
    });
    expect(readActiveRun(state)).toBeUndefined();
    expect(readConsecutiveFailures(state)).toBe(0);
    expect(state.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('0');
    expect(readAcceptedReport(state)?.uuid).toBe(U1);
    expect(recordWrites(h.kube, U1)).toBe(1);
    expect(h.kube.calls.createPod).toBe(1);
    // A finished pod is kept for debugging; the watch and every timer are stopped.
    expect(h.kube.pods.has(`${NS}/${POD1}`)).toBe(true);
    expect(h.kube.watching).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('records a failing report with its errors and counts the failure', async () => {
    const h = harness();
    const old = newKhState(NAME, NS);
    old.metadata.annotations = { [ANNOTATION.consecutiveFailures]: '1' };
    h.kube.putState(old);
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    await vi.advanceTimersByTimeAsync(2_000);
    await reportFrom(h.kube, POD1, { OK: false, Errors: ['kube-dns did not answer'] });
    h.kube.setPodStatus(NS, POD1, finished(1));

    const result = await running;
    expect(result).toMatchObject({
      kind: 'recorded',
      outcome: { kind: 'Failed', ok: false, errors: ['kube-dns did not answer'] },
    });
    const state = stateNow(h.kube);
    expect(state.spec).toMatchObject({
      OK: false,
      Errors: ['kube-dns did not answer'],
      RunDuration: '2s',
      LastRun: '2024-03-05T10:20:32Z',
    });
    expect(state.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('2');
  });

  it('fails at once on an image pull back-off and removes the pod', async () => {
    const h = harness();
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    await vi.advanceTimersByTimeAsync(3_000);
    h.kube.setPodStatus(NS, POD1, {
      phase: 'Pending',
      containerStatuses: [
        {
          name: 'main',
          image: 'img',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "img"' } },
        },
      ],
    });
    const result = await running;
    const error = `${PREFIX}checker pod ${POD1} failed to start: container main: ImagePullBackOff: Back-off pulling image "img"`;
    expect(result).toEqual({
      kind: 'recorded',
      runUuid: U1,
      adopted: false,
      outcome: { kind: 'ExecutionError', ok: false, errors: [error], node: '', durationMs: 3_000 },
    });
    expect(h.kube.removedPods).toEqual([POD1]);
    expect(stateNow(h.kube).spec).toMatchObject({ OK: false, Errors: [error], RunDuration: '3s' });
  });

  it('records a pod creation the API server refuses (422) as an execution error without waiting', async () => {
    const h = harness();
    h.kube.createPodError = () =>
      new FakeApiError(422, 'Pod "dns-1709634030" is invalid: spec.containers[0].image: Required value');
    const result = await runIteration(h.deps, h.cfg());
    const error = `${PREFIX}failed to create pod for checker: Pod "dns-1709634030" is invalid: spec.containers[0].image: Required value`;
    expect(result).toEqual({
      kind: 'recorded',
      runUuid: U1,
      adopted: false,
      outcome: { kind: 'ExecutionError', ok: false, errors: [error], node: '', durationMs: 0 },
    });
    expect(readActiveRun(stateNow(h.kube))).toBeUndefined();
    expect(h.kube.calls.watchRun).toBe(0);
  });

  it('times out at the deadline, says why, and removes the pod', async () => {
    const h = harness({ check: khcheck({ timeout: '10s' }) });
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    h.kube.setPodStatus(NS, POD1, {
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 3 Insufficient cpu.',
        },
      ],
    });

    await vi.advanceTimersByTimeAsync(9_990);
    expect(h.kube.pods.size).toBe(1);
    expect(readActiveRun(stateNow(h.kube))?.uuid).toBe(U1);
    await vi.advanceTimersByTimeAsync(20);

    const result = await running;
    const error = `${PREFIX}timed out waiting for checker pod to report in (pod ${POD1} was Pending; PodScheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.)`;
    expect(result).toMatchObject({
      kind: 'recorded',
      runUuid: U1,
      outcome: { kind: 'TimedOut', ok: false, errors: [error] },
    });
    const durationMs = (result as Extract<IterationResult, { kind: 'recorded' }>).outcome.durationMs;
    expect(durationMs).toBeGreaterThanOrEqual(10_000);
    expect(durationMs).toBeLessThan(10_020);
    expect(h.kube.removedPods).toEqual([POD1]);
    expect(h.kube.pods.size).toBe(0);
    const state = stateNow(h.kube);
    expect(state.spec).toMatchObject({ OK: false, Errors: [error], uuid: U1, AuthoritativePod: 'runner-a' });
    expect(readActiveRun(state)).toBeUndefined();
    expect(state.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('1');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('renews its lease while waiting, capped at the deadline', async () => {
    const h = harness({ check: khcheck({ timeout: '30s' }) });
    const running = runIteration(h.deps, h.cfg({ leaseMs: 10_000 }));
    await h.kube.until(() => h.kube.createdPods.length === 1);
    expect(readActiveRun(stateNow(h.kube))?.leaseUntilMs).toBe(T0 + 10_000);

    await vi.advanceTimersByTimeAsync(5_000);
    expect(readActiveRun(stateNow(h.kube))?.leaseUntilMs).toBe(T0 + 15_000);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(readActiveRun(stateNow(h.kube))?.leaseUntilMs).toBe(T0 + 30_000);

    h.controller.abort('test over');
    await running;
  });

  it('records nothing when the pod is deleted before it reported, but releases the claim', async () => {
    const h = harness();
    const before = newKhState(NAME, NS);
    before.spec = {
      ...before.spec,
      OK: false,
      Errors: ['an older failure'],
      RunDuration: '7s',
      AuthoritativePod: 'r0',
    };
    before.metadata.annotations = { [ANNOTATION.consecutiveFailures]: '4' };
    h.kube.putState(before);
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.watching === 1);
    h.kube.setPodStatus(NS, POD1, { phase: 'Running' });
    h.kube.deletePod(NS, POD1);

    const result = await running;
    expect(result).toMatchObject({ kind: 'recorded', runUuid: U1, outcome: { kind: 'Skipped', ok: true } });
    const state = stateNow(h.kube);
    expect(state.spec).toMatchObject({
      OK: false,
      Errors: ['an older failure'],
      RunDuration: '7s',
      AuthoritativePod: 'r0',
    });
    expect(readActiveRun(state)).toBeUndefined();
    expect(readLastOutcome(state)).toMatchObject({ uuid: U1, kind: 'Skipped' });
    expect(state.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('4');
  });

  // Regression: awaitOutcome used to start with podSeen = false even though the driver has just created (or found) the
  // pod, so a pod deleted before the watch's first list is "never seen": the run waits out the whole
  // timeout and records a TimedOut failure instead of Skipped.
  it('treats a pod deleted right after its creation as deleted, not as never seen', async () => {
    const h = harness();
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    expect(h.kube.watching).toBe(0);
    h.kube.deletePod(NS, POD1);
    await vi.advanceTimersByTimeAsync(1_000);
    h.controller.abort('test over');
    expect(await running).toMatchObject({ kind: 'recorded', runUuid: U1, outcome: { kind: 'Skipped' } });
  });

  it('deletes the khstate when the khcheck and its pod were deleted mid-run', async () => {
    const h = harness();
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.watching === 1);
    h.kube.deleteCheck(NS, NAME);
    h.kube.deletePod(NS, POD1);
    expect(await running).toEqual({ kind: 'check-deleted', runUuid: U1 });
    expect(h.kube.states.size).toBe(0);
  });
});

describe('runIteration: the run slot', () => {
  const live: ActiveRun = {
    uuid: EARLIER,
    startedAtMs: T0 - 60_000,
    deadlineMs: T0 + 240_000,
    pod: podNameFor(NAME, T0 - 60_000),
    runner: 'runner-b',
    leaseUntilMs: T0 + 20_000,
  };

  it('skips when another runner holds a live run, creating and removing nothing', async () => {
    const h = harness();
    h.kube.putState(stateWithRun(live));
    h.kube.putPod(checkerPodOf(live));
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toEqual({
      kind: 'busy',
      runUuid: EARLIER,
      reason: `another run of ${NS}/${NAME} is live (runner runner-b, until ${new Date(live.deadlineMs).toISOString()})`,
    });
    expect(h.kube.calls.createPod).toBe(0);
    expect(h.kube.calls.removePod).toBe(0);
    expect(h.kube.stateHistory).toHaveLength(1);
  });

  it('adopts a run whose lease expired and does not create a second pod', async () => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    h.kube.putState(stateWithRun(orphan, { [ANNOTATION.consecutiveFailures]: '1' }));
    h.kube.putPod(checkerPodOf(orphan));
    const running = runIteration(h.deps, h.cfg());

    await h.kube.until(() => h.kube.watching === 1);
    expect(readActiveRun(stateNow(h.kube))).toEqual({
      ...orphan,
      runner: 'runner-a',
      holder: HOLDER,
      leaseUntilMs: T0 + ITERATION_DEFAULTS.leaseMs,
    });
    await vi.advanceTimersByTimeAsync(1_000);
    await reportFrom(h.kube, orphan.pod, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, orphan.pod, finished(0));

    const result = await running;
    expect(result).toEqual({
      kind: 'recorded',
      runUuid: EARLIER,
      adopted: true,
      outcome: {
        kind: 'Succeeded',
        ok: true,
        errors: [],
        node: 'node-2',
        durationMs: 61_000,
        reportedAtMs: T0 + 1_000,
      },
    });
    expect(h.kube.calls.createPod).toBe(0);
    expect(h.kube.removedPods).toEqual([]);
    expect(stateNow(h.kube).spec).toMatchObject({
      OK: true,
      RunDuration: '1m1s',
      AuthoritativePod: 'runner-a',
      uuid: EARLIER,
    });
    expect(stateNow(h.kube).metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('0');
  });

  it('adopts a run whose pod was never created and creates it with the run’s UUID and deadline', async () => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    h.kube.putState(stateWithRun(orphan));
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    const pod = h.kube.createdPods[0] as V1Pod;
    expect(pod.metadata?.name).toBe(orphan.pod);
    expect(pod.metadata?.labels?.['kuberhealthy-run-id']).toBe(EARLIER);
    expect(pod.spec?.containers[0]?.env).toContainEqual({ name: 'KH_RUN_UUID', value: EARLIER });
    expect(pod.spec?.containers[0]?.env).toContainEqual({
      name: 'KH_CHECK_RUN_DEADLINE',
      value: String(orphan.deadlineMs / 1000),
    });
    h.controller.abort('test over');
    expect(await running).toMatchObject({ kind: 'interrupted', runUuid: EARLIER });
  });

  it('replaces an adopted pod whose report endpoint is dead (nothing listens) with a pod of the same run', async () => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    h.kube.putState(stateWithRun(orphan));
    h.kube.putPod(checkerPodOf(orphan, 'Running', DEAD_URL));
    h.endpoints.set(DEAD_URL, 'dead');
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    expect(h.probed).toEqual([DEAD_URL]);
    expect(h.kube.removedPods).toEqual([orphan.pod]);
    const pod = h.kube.createdPods[0] as V1Pod;
    expect(pod.metadata?.name).toBe(orphan.pod);
    expect(pod.spec?.containers[0]?.env).toContainEqual({ name: 'KH_REPORTING_URL', value: URL });
    expect(pod.spec?.containers[0]?.env).toContainEqual({ name: 'KH_RUN_UUID', value: EARLIER });

    await h.kube.until(() => h.kube.watching === 1);
    await reportFrom(h.kube, orphan.pod, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, orphan.pod, finished(0));
    expect(await running).toMatchObject({
      kind: 'recorded',
      runUuid: EARLIER,
      adopted: true,
      outcome: { kind: 'Succeeded' },
    });
  });

  it.each([
    { endpoint: 'alive', why: 'answers (the previous runner is alive, cut off from the API server)' },
    { endpoint: 'unknown', why: 'cannot be told about' },
  ] as const)('keeps an adopted pod whose endpoint $why, and records its report', async ({ endpoint }) => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-b', leaseUntilMs: T0 - 1 };
    h.kube.putState(stateWithRun(orphan));
    h.kube.putPod(checkerPodOf(orphan, 'Running', DEAD_URL));
    h.endpoints.set(DEAD_URL, endpoint);
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.watching === 1);
    expect(h.probed).toEqual([DEAD_URL]);
    // The report reaches the khstate through the pod's own endpoint (the previous runner's): same run UUID.
    await reportFrom(h.kube, orphan.pod, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, orphan.pod, finished(0));
    expect(await running).toMatchObject({ kind: 'recorded', adopted: true, outcome: { kind: 'Succeeded' } });
    expect(h.kube.calls.createPod).toBe(0);
    expect(recordWrites(h.kube, EARLIER)).toBe(1);
    expect(h.kube.removedPods).toEqual([]);
  });

  it('keeps an adopted pod with another endpoint when its run already reported', async () => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    const report = { uuid: EARLIER, atMs: T0 - 30_000, ok: true, errors: [], pod: orphan.pod };
    h.kube.putState(stateWithRun(orphan, { [ANNOTATION.report]: JSON.stringify(report) }));
    h.kube.putPod({
      ...checkerPodOf(orphan, 'Succeeded', 'http://10.0.0.9:8080/externalCheckStatus'),
      status: finished(0),
    });
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toMatchObject({
      kind: 'recorded',
      runUuid: EARLIER,
      adopted: true,
      outcome: { kind: 'Succeeded', ok: true, errors: [], durationMs: 30_000, reportedAtMs: T0 - 30_000 },
    });
    expect(h.kube.calls.createPod).toBe(0);
    expect(h.kube.removedPods).toEqual([]);
    expect(stateNow(h.kube).spec).toMatchObject({
      OK: true,
      RunDuration: '30s',
      LastRun: '2024-03-05T10:20:00Z',
    });
  });

  // Regression: awaitOutcome used to evaluate once before the watch's first view, with pod = undefined. When the
  // adopted run already reported, that first evaluation finishes the run without ever looking at its pod.
  it('records the node of an adopted run that already reported', async () => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    const report = { uuid: EARLIER, atMs: T0 - 30_000, ok: true, errors: [], pod: orphan.pod };
    h.kube.putState(stateWithRun(orphan, { [ANNOTATION.report]: JSON.stringify(report) }));
    h.kube.putPod({ ...checkerPodOf(orphan, 'Succeeded'), status: finished(0) });
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded', node: 'node-2' } });
    expect(stateNow(h.kube).spec.Node).toBe('node-2');
  });

  // Regression (same cause): a reported run whose pod is still running (a sidecar that never stops) is finished
  // with removePods = false because its pod was not looked at, so the pod is left running.
  it('removes the still-running pod of an adopted run that reported longer than exitGrace ago', async () => {
    const h = harness();
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    const report = { uuid: EARLIER, atMs: T0 - 30_000, ok: true, errors: [], pod: orphan.pod };
    h.kube.putState(stateWithRun(orphan, { [ANNOTATION.report]: JSON.stringify(report) }));
    h.kube.putPod(checkerPodOf(orphan, 'Running'));
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded' } });
    expect(h.kube.removedPods).toEqual([orphan.pod]);
  });

  // Regression: after replacing an adopted pod, awaitOutcome assesses the first pod carrying the run-id label,
  // which is the pod it just evicted while that pod is still terminating (listed before the replacement).
  it('assesses the replacement pod, not the adopted pod it evicted (still terminating)', async () => {
    const h = harness();
    h.kube.gracefulRemoval = true;
    const orphan = { ...live, runner: 'runner-dead', leaseUntilMs: T0 - 1 };
    h.kube.putState(stateWithRun(orphan));
    // The old pod exited with 1: its report to the dead runner's endpoint could not be delivered.
    h.kube.putPod({ ...checkerPodOf(orphan, 'Failed', DEAD_URL), status: finished(1) });
    h.endpoints.set(DEAD_URL, 'dead');
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.watching === 1);
    expect(h.kube.removedPods).toEqual([orphan.pod]);
    const fresh = h.kube.createdPods[0]?.metadata?.name ?? '';
    expect(fresh).not.toBe(orphan.pod);
    h.kube.setPodStatus(NS, fresh, { phase: 'Running' });

    // The evicted pod lingers (e.g. its node is unreachable) longer than the late-report grace.
    await vi.advanceTimersByTimeAsync(6_000);
    const state = stateNow(h.kube);
    h.controller.abort('test over');
    await running;
    // The replacement is running and has not reported: the run must still be waiting for it.
    expect(readActiveRun(state)?.uuid).toBe(EARLIER);
  });

  it('closes a stale run as timed out and claims a new one in the same write, removes its pod, runs the new one', async () => {
    const h = harness();
    const stale: ActiveRun = {
      uuid: EARLIER,
      startedAtMs: T0 - 301_000,
      deadlineMs: T0 - 1_000,
      pod: podNameFor(NAME, T0 - 301_000),
      runner: 'runner-dead',
      leaseUntilMs: T0 - 280_000,
    };
    h.kube.putState(stateWithRun(stale, { [ANNOTATION.consecutiveFailures]: '2' }));
    h.kube.putPod(checkerPodOf(stale));
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);

    const closed = h.kube.stateHistory.find((s) => readLastOutcome(s)?.uuid === EARLIER);
    expect(closed?.spec).toEqual({
      OK: false,
      Errors: [
        `${PREFIX}timed out waiting for checker pod to report in (runner runner-dead stopped before the run's deadline and nobody recorded it)`,
      ],
      RunDuration: '5m0s',
      Namespace: NS,
      Node: 'node-2',
      LastRun: '2024-03-05T10:20:30Z',
      AuthoritativePod: 'runner-a',
      uuid: U1,
    });
    expect(closed?.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('3');
    // One write per decision: the stale run's outcome and the new claim land together.
    expect(readActiveRun(closed ?? null)?.uuid).toBe(U1);
    expect(h.kube.stateHistory.filter((s) => readLastOutcome(s)?.uuid === EARLIER)[0]).toBe(
      h.kube.stateHistory[1],
    );
    expect(h.kube.removedPods).toEqual([stale.pod]);
    expect(readActiveRun(stateNow(h.kube))?.uuid).toBe(U1);
    expect(h.kube.createdPods[0]?.metadata?.labels?.['kuberhealthy-run-id']).toBe(U1);

    await reportFrom(h.kube, POD1, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, POD1, finished(0));
    expect(await running).toMatchObject({
      kind: 'recorded',
      runUuid: U1,
      adopted: false,
      outcome: { kind: 'Succeeded' },
    });
    expect(stateNow(h.kube).metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('0');
  });

  it('closes a stale run that did report with its report, not a timeout', async () => {
    const h = harness();
    const stale: ActiveRun = {
      uuid: EARLIER,
      startedAtMs: T0 - 301_000,
      deadlineMs: T0 - 1_000,
      pod: podNameFor(NAME, T0 - 301_000),
      runner: 'runner-dead',
      leaseUntilMs: T0 - 280_000,
    };
    const report = { uuid: EARLIER, atMs: T0 - 299_000, ok: false, errors: ['coredns down'], pod: stale.pod };
    h.kube.putState(stateWithRun(stale, { [ANNOTATION.report]: JSON.stringify(report) }));
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    const closed = h.kube.stateHistory.find((s) => readLastOutcome(s)?.uuid === EARLIER);
    expect(closed?.spec).toMatchObject({
      OK: false,
      Errors: ['coredns down'],
      RunDuration: '2s',
      LastRun: '2024-03-05T10:15:31Z',
    });
    expect(readLastOutcome(closed ?? null)?.kind).toBe('Failed');
    h.controller.abort('test over');
    await running;
  });

  it('leaves the run for the next invocation when interrupted, which adopts it', async () => {
    const h = harness();
    const first = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    await vi.advanceTimersByTimeAsync(2_000);
    h.controller.abort('SIGTERM');

    expect(await first).toEqual({ kind: 'interrupted', runUuid: U1, reason: 'SIGTERM' });
    const left = readActiveRun(stateNow(h.kube));
    expect(left?.uuid).toBe(U1);
    expect(left?.leaseUntilMs).toBeLessThanOrEqual(Date.now());
    expect(h.kube.pods.has(`${NS}/${POD1}`)).toBe(true);
    expect(h.kube.watching).toBe(0);
    expect(vi.getTimerCount()).toBe(0);

    const next = new AbortController();
    const second = runIteration(h.deps, h.cfg({ runner: 'runner-c', signal: next.signal }));
    await h.kube.until(() => h.kube.watching === 1);
    await reportFrom(h.kube, POD1, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, POD1, finished(0));
    expect(await second).toMatchObject({
      kind: 'recorded',
      runUuid: U1,
      adopted: true,
      outcome: { kind: 'Succeeded', durationMs: 2_000 },
    });
    expect(h.kube.calls.createPod).toBe(1);
    expect(stateNow(h.kube).spec.AuthoritativePod).toBe('runner-c');
  });

  it('returns at once when the signal is already aborted, releasing the lease', async () => {
    const h = harness();
    h.controller.abort('budget spent');
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toEqual({ kind: 'interrupted', runUuid: U1, reason: 'budget spent' });
    expect(readActiveRun(stateNow(h.kube))?.leaseUntilMs).toBe(T0);
  });
});

describe('runIteration: concurrency', () => {
  it('re-reads and records once when another writer conflicts with the record write', async () => {
    const h = harness();
    let injected = 0;
    h.kube.beforeReplace = (incoming) => {
      if (readActiveRun(incoming) || injected > 0) return;
      injected++;
      const stored = stateNow(h.kube);
      stored.metadata.annotations = { ...stored.metadata.annotations, 'example.com/touched': 'yes' };
      h.kube.putState(stored);
    };
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.createdPods.length === 1);
    await reportFrom(h.kube, POD1, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, POD1, finished(0));

    expect(await running).toMatchObject({ kind: 'recorded', runUuid: U1, outcome: { kind: 'Succeeded' } });
    expect(injected).toBe(1);
    expect(h.kube.conflicts).toEqual([{ op: 'replaceState', name: NAME }]);
    const state = stateNow(h.kube);
    expect(state.metadata.annotations?.['example.com/touched']).toBe('yes');
    expect(readActiveRun(state)).toBeUndefined();
    expect(readLastOutcome(state)).toMatchObject({ uuid: U1, kind: 'Succeeded' });
    expect(recordWrites(h.kube, U1)).toBe(1);
  });

  it.each([
    { name: 'no khstate yet (both create)', existing: false, conflict: 'createState' },
    { name: 'an idle khstate (both replace)', existing: true, conflict: 'replaceState' },
  ])('lets exactly one of two concurrent iterations run: $name', async ({ existing, conflict }) => {
    const h = harness();
    if (existing) h.kube.putState(newKhState(NAME, NS));
    h.kube.gateReads(2);
    const a = runIteration(h.deps, h.cfg({ runner: 'runner-a' }));
    const b = runIteration(h.deps, h.cfg({ runner: 'runner-b' }));

    await h.kube.until(() => h.kube.createdPods.length === 1);
    const loser = await Promise.race([a, b]);
    expect(loser.kind).toBe('busy');
    expect(h.kube.conflicts).toEqual([{ op: conflict, name: NAME }]);

    const pod = h.kube.createdPods[0] as V1Pod;
    const podName = pod.metadata?.name ?? '';
    await reportFrom(h.kube, podName, { OK: true, Errors: [] });
    h.kube.setPodStatus(NS, podName, finished(0));
    const results = await Promise.all([a, b]);

    expect(results.map((r) => r.kind).sort()).toEqual(['busy', 'recorded']);
    expect(h.kube.calls.createPod).toBe(1);
    const winner = results.find((r) => r.kind === 'recorded');
    const skipped = results.find((r) => r.kind === 'busy');
    expect(winner?.runUuid).toBe(pod.metadata?.labels?.['kuberhealthy-run-id']);
    expect(skipped).toMatchObject({ runUuid: winner?.runUuid, reason: expect.stringContaining('is live') });
    expect(recordWrites(h.kube, winner?.runUuid ?? '')).toBe(1);
  });
});

describe('runIteration: pods of earlier runs', () => {
  it('removes a live pod of an earlier run and old finished pods beyond keepFinishedPods', async () => {
    const h = harness();
    const earlier = (uuid: string, ageMs: number, phase: string): V1Pod =>
      checkerPodOf(
        {
          uuid,
          startedAtMs: T0 - ageMs,
          deadlineMs: 0,
          pod: podNameFor(NAME, T0 - ageMs),
          runner: 'r',
          leaseUntilMs: 0,
        },
        phase,
      );
    h.kube.putPod(earlier('e-live', 5_000, 'Running'));
    h.kube.putPod(earlier('e-new', 600_000, 'Succeeded'));
    h.kube.putPod(earlier('e-old', 1_200_000, 'Failed'));
    const running = runIteration(h.deps, h.cfg({ keepFinishedPods: 1 }));
    await h.kube.until(() => h.kube.createdPods.length === 1);
    expect(h.kube.removedPods).toEqual([podNameFor(NAME, T0 - 5_000), podNameFor(NAME, T0 - 1_200_000)]);
    expect([...h.kube.pods.keys()].sort()).toEqual(
      [`${NS}/${POD1}`, `${NS}/${podNameFor(NAME, T0 - 600_000)}`].sort(),
    );
    h.controller.abort('test over');
    await running;
  });
});
