import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { adoptRecords } from '../src/local/kubelet/adopt.ts';
import {
  buildPodStatus,
  type ContainerRecord,
  type ContainerState,
  type PodRuntime,
  podPhase,
} from '../src/local/kubelet/status.ts';

const T = '2026-01-01T00:00:00Z';
const running: ContainerState = { kind: 'running', startedAt: T, pid: 42 };
const exited = (exitCode: number): ContainerState => ({
  kind: 'terminated',
  exitCode,
  reason: exitCode === 0 ? 'Completed' : 'Error',
  startedAt: T,
  finishedAt: T,
  pid: 42,
});
const waiting = (reason = 'ContainerCreating'): ContainerState => ({ kind: 'waiting', reason });
const record = (
  name: string,
  state: ContainerState,
  extra: Partial<ContainerRecord> = {},
): ContainerRecord => ({
  name,
  image: 'img',
  imageID: 'img@sha256:1',
  state,
  restartCount: 0,
  ...extra,
});
const runtime = (containers: ContainerRecord[], extra: Partial<PodRuntime> = {}): PodRuntime => ({
  hostIp: '10.213.0.1',
  podIp: '10.213.1.1',
  startTime: T,
  sandboxReady: true,
  initContainers: [],
  containers,
  terminal: false,
  ...extra,
});

describe('podPhase (the kubelet getPhase)', () => {
  it.each([
    ['Never', [waiting()], false, 'Pending'],
    ['Never', [running], false, 'Running'],
    ['Never', [running, exited(0)], false, 'Running'],
    ['Never', [exited(0), exited(0)], false, 'Succeeded'],
    ['Never', [exited(0), exited(1)], false, 'Failed'],
    ['OnFailure', [exited(0)], false, 'Succeeded'],
    ['Always', [exited(0)], false, 'Running'],
    ['Always', [exited(137)], true, 'Failed'],
    ['Always', [exited(0)], true, 'Succeeded'],
  ] as const)('%s with %j (terminal %s) → %s', (policy, states, terminal, phase) => {
    const rt = runtime(
      states.map((s, i) => record(`c${i}`, s)),
      { terminal },
    );
    expect(podPhase(policy, rt)).toBe(phase);
  });

  it('is Running while a container waits to be restarted (CrashLoopBackOff)', () => {
    const rt = runtime([record('c', waiting('CrashLoopBackOff'), { lastTerminated: exited(1) as never })]);
    expect(podPhase('OnFailure', rt)).toBe('Running');
  });

  it('is Pending during init, Failed when an init container fails under Never', () => {
    const initRunning = runtime([record('c', waiting('PodInitializing'))], {
      initContainers: [record('i', running)],
    });
    expect(podPhase('Never', initRunning)).toBe('Pending');
    const initFailed = runtime([record('c', waiting('PodInitializing'))], {
      initContainers: [record('i', exited(1))],
    });
    expect(podPhase('Never', initFailed)).toBe('Failed');
    expect(podPhase('Always', initFailed)).toBe('Pending');
  });
});

describe('buildPodStatus', () => {
  const pod: V1Pod = {
    metadata: { name: 'p', namespace: 'ns', uid: 'u' },
    spec: { restartPolicy: 'Never', containers: [{ name: 'c' }] },
    status: {
      phase: 'Pending',
      qosClass: 'BestEffort',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: '2025-12-31T00:00:00Z' as never },
        { type: 'Ready', status: 'False', lastTransitionTime: '2025-12-31T00:00:01Z' as never },
      ],
    },
  };

  it('keeps what others own and writes the kubelet’s fields', () => {
    const status = buildPodStatus(pod, runtime([record('c', running)]), T);
    expect(status.phase).toBe('Running');
    expect(status.qosClass).toBe('BestEffort');
    expect(status.hostIP).toBe('10.213.0.1');
    expect(status.podIPs).toEqual([{ ip: '10.213.1.1' }]);
    const byType = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c]));
    expect(byType.PodScheduled?.lastTransitionTime).toBe('2025-12-31T00:00:00Z');
    expect(byType.Ready).toMatchObject({ status: 'True', lastTransitionTime: T });
    expect(byType.ContainersReady?.status).toBe('True');
    expect(byType.Initialized?.status).toBe('True');
    expect(byType.PodReadyToStartContainers?.status).toBe('True');
    expect(status.containerStatuses).toEqual([
      {
        name: 'c',
        image: 'img',
        imageID: 'img@sha256:1',
        containerID: 'proc://42',
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: T } },
        lastState: {},
      },
    ]);
  });

  it('keeps a condition’s lastTransitionTime while its status stays', () => {
    const status = buildPodStatus(pod, runtime([record('c', waiting())]), '2026-02-02T00:00:00Z');
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({
      status: 'False',
      lastTransitionTime: '2025-12-31T00:00:01Z',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [c]',
    });
  });

  it('reports a completed pod as the kubelet does', () => {
    const status = buildPodStatus(
      pod,
      runtime([record('c', exited(0))], { terminal: true, sandboxReady: false }),
      T,
    );
    expect(status.phase).toBe('Succeeded');
    const byType = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c]));
    expect(byType.Ready).toMatchObject({ status: 'False', reason: 'PodCompleted' });
    expect(byType.PodReadyToStartContainers?.status).toBe('False');
    expect(status.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
  });

  it('reports unmet readiness gates', () => {
    const gated = { ...pod, spec: { ...pod.spec!, readinessGates: [{ conditionType: 'example.com/ok' }] } };
    const ready = buildPodStatus(gated, runtime([record('c', running)]), T).conditions?.find(
      (c) => c.type === 'Ready',
    );
    expect(ready).toMatchObject({ status: 'False', reason: 'ReadinessGatesNotReady' });
  });

  it('lists init containers that have not completed', () => {
    const rt = runtime([record('c', waiting('PodInitializing'))], {
      initContainers: [record('a', exited(0)), record('b', running)],
    });
    const status = buildPodStatus(
      { ...pod, spec: { ...pod.spec!, initContainers: [{ name: 'a' }, { name: 'b' }] } },
      rt,
      T,
    );
    expect(status.conditions?.find((c) => c.type === 'Initialized')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [b]',
    });
    expect(status.initContainerStatuses?.map((s) => s.ready)).toEqual([true, false]);
  });
});

describe('adoptRecords', () => {
  const spec = (restartPolicy: string) => ({
    restartPolicy,
    initContainers: [{ name: 'init', image: 'i' }],
    containers: [{ name: 'c', image: 'img' }],
  });
  const status = {
    startTime: '2026-01-01T00:00:00Z' as never,
    initContainerStatuses: [
      {
        name: 'init',
        image: 'i',
        imageID: '',
        ready: true,
        restartCount: 0,
        state: { terminated: { exitCode: 0 } },
      },
    ],
    containerStatuses: [
      {
        name: 'c',
        image: 'img',
        imageID: '',
        ready: true,
        restartCount: 2,
        state: { running: { startedAt: T as never } },
      },
    ],
  };

  it('gives a new pod waiting records', () => {
    const records = adoptRecords({ metadata: {}, spec: spec('Never') });
    expect(records.initContainers[0]?.state).toEqual({ kind: 'waiting', reason: 'ContainerCreating' });
    expect(records.containers[0]?.state).toEqual({ kind: 'waiting', reason: 'PodInitializing' });
    expect(records.startTime).toBeUndefined();
  });

  it('marks a run lost by an earlier kubelet as ContainerStatusUnknown, final under Never', () => {
    const records = adoptRecords({ metadata: {}, spec: spec('Never'), status });
    expect(records.initContainers[0]?.state).toMatchObject({ kind: 'terminated', exitCode: 0 });
    expect(records.containers[0]?.state).toMatchObject({
      kind: 'terminated',
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
    });
    expect(records.startTime).toBe('2026-01-01T00:00:00Z');
  });

  it('runs a lost container again under Always, counting the restart', () => {
    const records = adoptRecords({ metadata: {}, spec: spec('Always'), status });
    expect(records.containers[0]).toMatchObject({ restartCount: 3, state: { kind: 'waiting' } });
    expect(records.containers[0]?.lastTerminated?.reason).toBe('ContainerStatusUnknown');
  });
});
