import type { V1ContainerStatus, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type Assessment,
  assessRun,
  DEFAULT_TIMINGS,
  describePodProgress,
  isPodTerminal,
  type RunObservation,
} from '../../lib/run/assess.ts';
import { type AcceptedReport, type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

const T0 = 1_700_000_000_000;
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const POD = 'dns-1700000000';
const PREFIX = 'Check execution error: checks/dns: ';
const TIMINGS = { exitGraceMs: 30_000, lateReportGraceMs: 5_000 };

const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: POD,
  runner: 'runner-a',
  leaseUntilMs: T0 + 30_000,
};

function stateWith(report?: Partial<AcceptedReport>): KhState {
  const state = newKhState('dns', 'checks');
  state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(RUN) };
  if (report) {
    state.metadata.annotations[ANNOTATION.report] = JSON.stringify({
      uuid: UUID,
      atMs: T0 + 1_500,
      ok: true,
      errors: [],
      pod: POD,
      ...report,
    });
  }
  return state;
}

const terminated = (
  name: string,
  exitCode: number,
  extra: { reason?: string; message?: string } = {},
): V1ContainerStatus => ({
  name,
  image: 'img',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode, ...extra } },
});
const running = (name: string): V1ContainerStatus => ({
  name,
  image: 'img',
  imageID: '',
  ready: true,
  restartCount: 0,
  state: { running: {} },
});
const waiting = (name: string, reason: string, message?: string): V1ContainerStatus => ({
  name,
  image: 'img',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { waiting: { reason, ...(message ? { message } : {}) } },
});

function pod(
  phase: string | undefined,
  extra: {
    containers?: V1ContainerStatus[];
    init?: V1ContainerStatus[];
    conditions?: V1PodCondition[];
    node?: string;
  } = {},
): V1Pod {
  return {
    metadata: { name: POD, namespace: 'checks', labels: { 'kuberhealthy-run-id': UUID } },
    spec: { containers: [{ name: 'main', image: 'img' }], ...(extra.node ? { nodeName: extra.node } : {}) },
    status: {
      ...(phase ? { phase } : {}),
      ...(extra.containers ? { containerStatuses: extra.containers } : {}),
      ...(extra.init ? { initContainerStatuses: extra.init } : {}),
      ...(extra.conditions ? { conditions: extra.conditions } : {}),
    },
  };
}

function observe(o: Partial<RunObservation>): RunObservation {
  return {
    run: RUN,
    checkName: 'dns',
    namespace: 'checks',
    state: stateWith(),
    pod: undefined,
    podSeen: false,
    podTerminalSinceMs: undefined,
    nowMs: T0 + 2_000,
    ...o,
  };
}

const unschedulable: V1PodCondition = {
  type: 'PodScheduled',
  status: 'False',
  reason: 'Unschedulable',
  message: '0/3 nodes are available: 3 Insufficient cpu.',
};

describe('assessRun: an accepted report of this run', () => {
  it.each([
    {
      name: 'OK report, pod Succeeded',
      report: { ok: true, errors: [] },
      pod: pod('Succeeded', { containers: [terminated('main', 0)], node: 'node-1' }),
      expected: { kind: 'Succeeded', ok: true, errors: [], node: 'node-1' },
    },
    {
      name: 'failing report, pod Failed',
      report: { ok: false, errors: ['dns lookup of kube-dns failed'] },
      pod: pod('Failed', { containers: [terminated('main', 1)], node: 'node-2' }),
      expected: { kind: 'Failed', ok: false, errors: ['dns lookup of kube-dns failed'], node: 'node-2' },
    },
    {
      name: 'OK report, pod Running but every main container terminated',
      report: { ok: true, errors: [] },
      pod: pod('Running', { containers: [terminated('main', 0), terminated('side', 0)] }),
      expected: { kind: 'Succeeded', ok: true, errors: [], node: '' },
    },
    {
      name: 'OK report, pod already gone (never seen)',
      report: { ok: true, errors: [] },
      pod: undefined,
      expected: { kind: 'Succeeded', ok: true, errors: [], node: '' },
    },
  ])('$name → finish $expected.kind with duration = report time − start', ({ report, pod: p, expected }) => {
    const result = assessRun(
      observe({ state: stateWith(report), pod: p, podSeen: p !== undefined, nowMs: T0 + 9_000 }),
      TIMINGS,
    );
    expect(result).toEqual({
      kind: 'finish',
      removePods: false,
      outcome: { ...expected, durationMs: 1_500, reportedAtMs: T0 + 1_500 },
    });
  });

  it('waits for a still-running pod until the report time plus exitGrace', () => {
    const p = pod('Running', { containers: [terminated('main', 0), running('istio-proxy')] });
    const result = assessRun(
      observe({ state: stateWith({}), pod: p, podSeen: true, nowMs: T0 + 10_000 }),
      TIMINGS,
    );
    expect(result).toEqual({ kind: 'wait', untilMs: T0 + 1_500 + 30_000 });
  });

  it.each([
    { name: 'exactly at the end of exitGrace', nowMs: T0 + 31_500 },
    { name: 'after exitGrace', nowMs: T0 + 45_000 },
  ])('finishes $name and removes the still-running pod', ({ nowMs }) => {
    const p = pod('Running', { containers: [running('main')], node: 'node-3' });
    expect(assessRun(observe({ state: stateWith({}), pod: p, podSeen: true, nowMs }), TIMINGS)).toEqual({
      kind: 'finish',
      removePods: true,
      outcome: {
        kind: 'Succeeded',
        ok: true,
        errors: [],
        node: 'node-3',
        durationMs: 1_500,
        reportedAtMs: T0 + 1_500,
      },
    });
  });

  it('counts the report even when the deadline has passed since', () => {
    const p = pod('Succeeded', { containers: [terminated('main', 0)] });
    const result = assessRun(
      observe({ state: stateWith({}), pod: p, podSeen: true, nowMs: RUN.deadlineMs + 10_000 }),
      TIMINGS,
    );
    expect(result).toMatchObject({ kind: 'finish', outcome: { kind: 'Succeeded', durationMs: 1_500 } });
  });

  it('clamps a report timestamped before the start to a zero duration', () => {
    const result = assessRun(observe({ state: stateWith({ atMs: T0 - 500 }), pod: undefined }), TIMINGS);
    expect(result).toMatchObject({ kind: 'finish', outcome: { durationMs: 0, reportedAtMs: T0 - 500 } });
  });

  it('ignores a report of another run UUID and keeps waiting for the deadline', () => {
    const p = pod('Running', { containers: [running('main')] });
    const result = assessRun(
      observe({
        state: stateWith({ uuid: 'an-earlier-run', ok: false, errors: ['old'] }),
        pod: p,
        podSeen: true,
      }),
      TIMINGS,
    );
    expect(result).toEqual({ kind: 'wait', untilMs: RUN.deadlineMs });
  });

  it('uses the default timings when none are given', () => {
    const p = pod('Running', { containers: [running('main')] });
    expect(DEFAULT_TIMINGS).toEqual({ exitGraceMs: 30_000, lateReportGraceMs: 500 });
    expect(assessRun(observe({ state: stateWith({}), pod: p, podSeen: true }))).toEqual({
      kind: 'wait',
      untilMs: T0 + 1_500 + DEFAULT_TIMINGS.exitGraceMs,
    });
  });
});

describe('assessRun: no report', () => {
  it('records nothing (Skipped) when the pod was seen and is now gone', () => {
    const result = assessRun(observe({ pod: undefined, podSeen: true, nowMs: T0 + 4_000 }), TIMINGS);
    expect(result).toEqual({
      kind: 'finish',
      removePods: false,
      outcome: {
        kind: 'Skipped',
        ok: true,
        errors: [],
        node: '',
        durationMs: 4_000,
        note: 'the checker pod was deleted before it reported; no result recorded, the last result stands',
      },
    });
  });

  it('waits while someone else deletes the pod, then records nothing once it stopped without a report', () => {
    const deleting = (phase: string, containers: V1ContainerStatus[]) => ({
      ...pod(phase, { containers }),
      metadata: { ...pod(phase).metadata, deletionTimestamp: new Date(T0 + 3_000) },
    });
    const stillRunning = assessRun(
      observe({ pod: deleting('Running', [running('main')]), podSeen: true }),
      TIMINGS,
    );
    expect(stillRunning).toEqual({ kind: 'wait', untilMs: RUN.deadlineMs });
    const stopped = assessRun(
      observe({
        pod: deleting('Failed', [terminated('main', 143, { reason: 'Error' })]),
        podSeen: true,
        nowMs: T0 + 4_000,
      }),
      TIMINGS,
    );
    expect(stopped).toMatchObject({
      kind: 'finish',
      removePods: false,
      outcome: { kind: 'Skipped', ok: true },
    });
  });

  it('times out a pod that is still terminating at the deadline instead of waiting forever', () => {
    const deleting = { ...pod('Running', { containers: [running('main')] }) };
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: new Date(T0) };
    const result = assessRun(observe({ pod: deleting, podSeen: true, nowMs: RUN.deadlineMs }), TIMINGS);
    expect(result).toMatchObject({ kind: 'finish', outcome: { kind: 'TimedOut' } });
  });

  it('keeps waiting for the deadline when the pod was never seen', () => {
    expect(assessRun(observe({ pod: undefined, podSeen: false }), TIMINGS)).toEqual({
      kind: 'wait',
      untilMs: RUN.deadlineMs,
    });
  });

  it.each([
    {
      reason: 'ErrImagePull',
      status: waiting('main', 'ErrImagePull', 'rpc error: pull access denied for nope/nope'),
      text: 'container main: ErrImagePull: rpc error: pull access denied for nope/nope',
    },
    {
      reason: 'ImagePullBackOff',
      status: waiting('main', 'ImagePullBackOff', 'Back-off pulling image "nope/nope"'),
      text: 'container main: ImagePullBackOff: Back-off pulling image "nope/nope"',
    },
    {
      reason: 'InvalidImageName',
      status: waiting(
        'main',
        'InvalidImageName',
        'Failed to apply default image tag "NOPE:": invalid reference format',
      ),
      text: 'container main: InvalidImageName: Failed to apply default image tag "NOPE:": invalid reference format',
    },
    {
      reason: 'CreateContainerConfigError',
      status: waiting('main', 'CreateContainerConfigError', 'secret "dns-creds" not found'),
      text: 'container main: CreateContainerConfigError: secret "dns-creds" not found',
    },
    {
      reason: 'ErrImagePull without a message',
      status: waiting('main', 'ErrImagePull'),
      text: 'container main: ErrImagePull',
    },
  ])('fails at once on a start failure: $reason', ({ status, text }) => {
    const p = pod('Pending', { containers: [status], node: 'node-1' });
    expect(assessRun(observe({ pod: p, podSeen: true, nowMs: T0 + 7_000 }), TIMINGS)).toEqual({
      kind: 'finish',
      removePods: true,
      outcome: {
        kind: 'ExecutionError',
        ok: false,
        errors: [`${PREFIX}checker pod ${POD} failed to start: ${text}`],
        node: 'node-1',
        durationMs: 7_000,
      },
    });
  });

  it('fails at once on a start failure in an init container', () => {
    const p = pod('Pending', {
      init: [waiting('fetch-config', 'ImagePullBackOff', 'Back-off pulling image "busybox:nope"')],
      containers: [waiting('main', 'PodInitializing')],
    });
    const result = assessRun(observe({ pod: p, podSeen: true }), TIMINGS);
    expect(result).toMatchObject({
      kind: 'finish',
      removePods: true,
      outcome: {
        kind: 'ExecutionError',
        errors: [
          `${PREFIX}checker pod ${POD} failed to start: container fetch-config: ImagePullBackOff: Back-off pulling image "busybox:nope"`,
        ],
      },
    });
  });

  it.each(['ContainerCreating', 'PodInitializing'])(
    'does not treat the ordinary waiting reason %s as a start failure',
    (reason) => {
      const p = pod('Pending', { containers: [waiting('main', reason)] });
      expect(assessRun(observe({ pod: p, podSeen: true }), TIMINGS)).toEqual({
        kind: 'wait',
        untilMs: RUN.deadlineMs,
      });
    },
  );

  it('waits lateReportGrace after the pod exited without a report', () => {
    const p = pod('Failed', { containers: [terminated('main', 2)] });
    const result = assessRun(
      observe({ pod: p, podSeen: true, podTerminalSinceMs: T0 + 10_000, nowMs: T0 + 11_000 }),
      TIMINGS,
    );
    expect(result).toEqual({ kind: 'wait', untilMs: T0 + 15_000 });
  });

  it('starts the late-report grace now when the terminal time is not known yet', () => {
    const p = pod('Succeeded', { containers: [terminated('main', 0)] });
    const result = assessRun(
      observe({ pod: p, podSeen: true, podTerminalSinceMs: undefined, nowMs: T0 + 20_000 }),
      TIMINGS,
    );
    expect(result).toEqual({ kind: 'wait', untilMs: T0 + 25_000 });
  });

  it('caps the late-report grace at the deadline', () => {
    const p = pod('Failed', { containers: [terminated('main', 1)] });
    const since = RUN.deadlineMs - 2_000;
    const result = assessRun(
      observe({ pod: p, podSeen: true, podTerminalSinceMs: since, nowMs: since + 1 }),
      TIMINGS,
    );
    expect(result).toEqual({ kind: 'wait', untilMs: RUN.deadlineMs });
  });

  it.each([
    {
      name: 'exit code, reason and termination message',
      containers: [terminated('main', 3, { reason: 'Error', message: '  cannot reach kube-dns\n' })],
      text: 'container main exited with code 3 (Error): cannot reach kube-dns',
    },
    {
      name: 'exit code only',
      containers: [terminated('main', 137)],
      text: 'container main exited with code 137',
    },
    {
      name: 'the failing container rather than a clean one',
      containers: [
        terminated('side', 0, { reason: 'Completed' }),
        terminated('main', 1, { reason: 'Error', message: 'boom' }),
      ],
      text: 'container main exited with code 1 (Error): boom',
    },
    {
      name: 'a clean exit without a report',
      containers: [terminated('main', 0, { reason: 'Completed' })],
      text: 'container main exited with code 0 (Completed)',
    },
  ])('fails after the grace with $name', ({ containers, text }) => {
    const p = pod('Failed', { containers, node: 'node-9' });
    const result = assessRun(
      observe({ pod: p, podSeen: true, podTerminalSinceMs: T0 + 10_000, nowMs: T0 + 15_000 }),
      TIMINGS,
    );
    expect(result).toEqual({
      kind: 'finish',
      removePods: false,
      outcome: {
        kind: 'ExecutionError',
        ok: false,
        errors: [`${PREFIX}checker pod ${POD} exited without reporting: ${text}`],
        node: 'node-9',
        durationMs: 15_000,
      },
    });
  });

  it('describes a pod that ended without any container status by its phase', () => {
    const p = pod('Failed');
    const result = assessRun(
      observe({ pod: p, podSeen: true, podTerminalSinceMs: T0, nowMs: T0 + 5_000 }),
      TIMINGS,
    );
    expect(result).toMatchObject({
      kind: 'finish',
      outcome: {
        kind: 'ExecutionError',
        errors: [`${PREFIX}checker pod ${POD} ended in phase Failed without reporting`],
      },
    });
  });

  it('times out at the deadline with the Pending pod’s Unschedulable condition', () => {
    const p = pod('Pending', { conditions: [unschedulable] });
    expect(assessRun(observe({ pod: p, podSeen: true, nowMs: RUN.deadlineMs }), TIMINGS)).toEqual({
      kind: 'finish',
      removePods: true,
      outcome: {
        kind: 'TimedOut',
        ok: false,
        errors: [
          `${PREFIX}timed out waiting for checker pod to report in (pod ${POD} was Pending; PodScheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.)`,
        ],
        node: '',
        durationMs: 300_000,
      },
    });
  });

  it.each([
    {
      name: 'a running pod',
      pod: pod('Running', { containers: [running('main')], node: 'n1' }),
      seen: true,
      node: 'n1',
      what: `pod ${POD} was Running`,
    },
    { name: 'no pod ever', pod: undefined, seen: false, node: '', what: 'the checker pod was never seen' },
  ])('times out after the deadline with $name', ({ pod: p, seen, node, what }) => {
    const result = assessRun(observe({ pod: p, podSeen: seen, nowMs: RUN.deadlineMs + 1_000 }), TIMINGS);
    expect(result).toEqual({
      kind: 'finish',
      removePods: true,
      outcome: {
        kind: 'TimedOut',
        ok: false,
        errors: [`${PREFIX}timed out waiting for checker pod to report in (${what})`],
        node,
        durationMs: 301_000,
      },
    });
  });

  it.each([
    { name: 'a Pending pod', pod: pod('Pending') },
    { name: 'a Running pod', pod: pod('Running', { containers: [running('main')] }) },
    { name: 'no pod yet', pod: undefined },
  ])('waits until the deadline with $name', ({ pod: p }) => {
    const result: Assessment = assessRun(
      observe({ pod: p, podSeen: p !== undefined, nowMs: RUN.deadlineMs - 1 }),
      TIMINGS,
    );
    expect(result).toEqual({ kind: 'wait', untilMs: RUN.deadlineMs });
  });
});

describe('describePodProgress', () => {
  it.each([
    { name: 'no pod, never seen', pod: undefined, seen: false, text: 'the checker pod was never seen' },
    { name: 'no pod, seen before', pod: undefined, seen: true, text: 'the checker pod was deleted' },
    {
      name: 'a pod without status',
      pod: { metadata: { name: 'p1' } },
      seen: true,
      text: 'pod p1 was Pending',
    },
    {
      name: 'a Pending pod that cannot be scheduled',
      pod: { ...pod('Pending', { conditions: [unschedulable] }) },
      seen: true,
      text: `pod ${POD} was Pending; PodScheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.`,
    },
    {
      name: 'a Pending pod with a waiting container',
      pod: pod('Pending', {
        conditions: [{ type: 'PodScheduled', status: 'True' }],
        containers: [waiting('main', 'ContainerCreating')],
      }),
      seen: true,
      text: `pod ${POD} was Pending; waiting: ContainerCreating`,
    },
    {
      name: 'a Pending pod with a condition and a waiting message',
      pod: pod('Pending', {
        conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        containers: [waiting('main', 'ImagePullBackOff', 'Back-off pulling image "x"')],
      }),
      seen: true,
      text: `pod ${POD} was Pending; Ready: ContainersNotReady; waiting: ImagePullBackOff: Back-off pulling image "x"`,
    },
    {
      name: 'a Running pod (conditions only matter while Pending)',
      pod: pod('Running', {
        conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        containers: [running('main')],
      }),
      seen: true,
      text: `pod ${POD} was Running`,
    },
  ])('$name', ({ pod: p, seen, text }) => {
    expect(describePodProgress(p as V1Pod | undefined, seen)).toBe(text);
  });
});

describe('isPodTerminal', () => {
  it.each([
    { name: 'Succeeded', pod: pod('Succeeded'), terminal: true },
    { name: 'Failed', pod: pod('Failed'), terminal: true },
    { name: 'Pending', pod: pod('Pending'), terminal: false },
    { name: 'Running, no statuses', pod: pod('Running'), terminal: false },
    {
      name: 'Running, all main containers terminated',
      pod: pod('Running', { containers: [terminated('a', 0), terminated('b', 1)] }),
      terminal: true,
    },
    {
      name: 'Running, one container still running',
      pod: pod('Running', { containers: [terminated('a', 0), running('b')] }),
      terminal: false,
    },
    {
      name: 'init container terminated only',
      pod: pod('Pending', { init: [terminated('i', 0)] }),
      terminal: false,
    },
  ])('$name → $terminal', ({ pod: p, terminal }) => {
    expect(isPodTerminal(p)).toBe(terminal);
  });
});
