import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  initialWaitMemory,
  observeWait,
  pickRunPod,
  type WaitContext,
  type WaitMemory,
  type WaitObservation,
} from '../../lib/run/wait-observe.ts';
import { type AcceptedReport, type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

const T0 = 1_700_000_000_000;
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const OTHER = '99999999-9999-4999-8999-999999999999';
const POD = 'dns-1700000000';
const PREFIX = 'Check execution error: checks/dns: ';
const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: POD,
  runner: 'runner-a',
  leaseUntilMs: T0 + 30_000,
};
const CTX: WaitContext = {
  run: RUN,
  checkName: 'dns',
  namespace: 'checks',
  timings: { exitGraceMs: 30_000, lateReportGraceMs: 5_000 },
};

/** The khstate holding run (null: no active run), with an accepted report when given. */
function stateWith(run: ActiveRun | null, report?: Partial<AcceptedReport>): KhState {
  const state = newKhState('dns', 'checks');
  state.metadata.annotations = run ? { [ANNOTATION.run]: JSON.stringify(run) } : {};
  if (report) {
    state.metadata.annotations[ANNOTATION.report] = JSON.stringify({
      uuid: UUID,
      atMs: T0 + 2_000,
      ok: true,
      errors: [],
      pod: POD,
      ...report,
    });
  }
  return state;
}
const LIVE = stateWith(RUN);
const REPORTED = stateWith(RUN, {});

const exited = (exitCode: number): V1ContainerStatus => ({
  name: 'main',
  image: 'img',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode } },
});

function pod(
  phase: string | undefined,
  extra: { name?: string; uuid?: string; createdMs?: number; deleting?: boolean; exitCode?: number } = {},
): V1Pod {
  return {
    metadata: {
      name: extra.name ?? POD,
      namespace: 'checks',
      labels: { 'kuberhealthy-run-id': extra.uuid ?? UUID },
      creationTimestamp: new Date(extra.createdMs ?? T0),
      ...(extra.deleting ? { deletionTimestamp: new Date(T0 + 1_000) } : {}),
    },
    spec: { nodeName: 'node-1', containers: [{ name: 'main', image: 'img' }] },
    status: {
      ...(phase ? { phase } : {}),
      ...(extra.exitCode !== undefined ? { containerStatuses: [exited(extra.exitCode)] } : {}),
    },
  };
}

/** Memory after a first view showed a running pod at T0 + 1 s. */
const WATCHING: WaitMemory = {
  ...initialWaitMemory(LIVE, true),
  pod: pod('Running'),
  primed: true,
  lastPhase: 'Running',
};

const view = (atMs: number, pods: V1Pod[], state: KhState | null = LIVE): WaitObservation => ({
  kind: 'view',
  pods,
  state,
  nowMs: atMs,
});
const tick = (atMs: number): WaitObservation => ({ kind: 'tick', nowMs: atMs });

describe('observeWait: what to do next', () => {
  it.each([
    {
      name: 'before the first view, waits for the deadline only',
      memory: initialWaitMemory(REPORTED, true),
      observation: tick(T0),
      decision: { kind: 'wait-until', untilMs: T0 + 300_000 },
      phases: [],
    },
    {
      // Kuberhealthy's own kh-test-fail-short-timeout (timeout 1s): the deadline came before the watch's
      // first list; nothing showed the pod deleted, and v2 records a timeout there (it was Skipped).
      name: 'before the first view and past the deadline, a created pod not yet seen times out',
      memory: initialWaitMemory(LIVE, true),
      observation: tick(T0 + 300_000),
      decision: { kind: 'finish', removePods: true, outcome: { kind: 'TimedOut', ok: false } },
      phases: [],
    },
    {
      name: 'before the first view and past the deadline, a pod never known times out',
      memory: initialWaitMemory(LIVE, false),
      observation: tick(T0 + 300_000),
      decision: {
        kind: 'finish',
        removePods: true,
        outcome: {
          kind: 'TimedOut',
          errors: [
            `${PREFIX}timed out waiting for checker pod to report in (the checker pod was never seen)`,
          ],
        },
      },
      phases: [],
    },
    {
      name: 'a khstate whose active run is another is lost, even before the first view',
      memory: initialWaitMemory(LIVE, true),
      observation: view(T0, [pod('Running')], stateWith({ ...RUN, uuid: OTHER })),
      decision: { kind: 'superseded', reason: 'the run was closed by another invocation', taken: false },
      phases: [],
    },
    {
      name: 'the same run adopted by another invocation (its lease lapsed) is lost, taken',
      memory: WATCHING,
      observation: view(
        T0 + 5_000,
        [pod('Running')],
        stateWith({ ...RUN, runner: 'runner-b', holder: 'runner-b/invocation-9' }),
      ),
      decision: {
        kind: 'superseded',
        reason: "the run was taken over by runner runner-b after this runner's lease lapsed",
        taken: true,
      },
      phases: [],
    },
    {
      name: 'a khstate without an active run is lost',
      memory: WATCHING,
      observation: view(T0 + 5_000, [pod('Running')], stateWith(null)),
      decision: { kind: 'superseded' },
      phases: [],
    },
    {
      name: 'a fresh read that finds no khstate at all is lost',
      memory: WATCHING,
      observation: { kind: 'state', state: null, nowMs: T0 + 5_000 },
      decision: { kind: 'superseded' },
      phases: [],
    },
    {
      name: 'a view without the khstate keeps the last one (the watch lost sight of it)',
      memory: WATCHING,
      observation: view(T0 + 5_000, [pod('Running')], null),
      decision: { kind: 'wait-until', untilMs: T0 + 300_000 },
      phases: [],
    },
    {
      name: 'the first view of a pending pod announces it and waits for the deadline',
      memory: initialWaitMemory(LIVE, true),
      observation: view(T0 + 100, [pod(undefined)]),
      decision: { kind: 'wait-until', untilMs: T0 + 300_000 },
      phases: ['pod Pending'],
    },
    {
      name: 'a terminating pod is announced as such and waited on until the deadline',
      memory: WATCHING,
      observation: view(T0 + 2_000, [pod('Running', { deleting: true })]),
      decision: { kind: 'wait-until', untilMs: T0 + 300_000 },
      phases: ['pod Terminating'],
    },
    {
      name: 'a report with the pod still running waits out the exit grace',
      memory: WATCHING,
      observation: view(T0 + 2_000, [pod('Running')], REPORTED),
      decision: { kind: 'wait-until', untilMs: T0 + 32_000 },
      phases: ['report received'],
    },
    {
      name: 'a report and an exited pod finish the run with the report, keeping the pod',
      memory: WATCHING,
      observation: view(T0 + 3_000, [pod('Succeeded', { exitCode: 0 })], REPORTED),
      decision: {
        kind: 'finish',
        removePods: false,
        outcome: { kind: 'Succeeded', ok: true, node: 'node-1', durationMs: 2_000, reportedAtMs: T0 + 2_000 },
      },
      phases: ['pod Succeeded', 'report received'],
    },
    {
      name: 'a pod that exited without a report waits for a late one',
      memory: WATCHING,
      observation: view(T0 + 10_000, [pod('Failed', { exitCode: 1 })]),
      decision: { kind: 'wait-until', untilMs: T0 + 15_000 },
      phases: ['pod Failed'],
    },
    {
      name: 'a pod seen and now gone was deleted by someone else',
      memory: WATCHING,
      observation: view(T0 + 10_000, []),
      decision: { kind: 'finish', removePods: false, outcome: { kind: 'Skipped' } },
      phases: [],
    },
    {
      name: 'at the deadline, the run times out and says what it last saw',
      memory: WATCHING,
      observation: tick(T0 + 300_000),
      decision: {
        kind: 'finish',
        removePods: true,
        outcome: {
          kind: 'TimedOut',
          errors: [`${PREFIX}timed out waiting for checker pod to report in (pod ${POD} was Running)`],
        },
      },
      phases: [],
    },
    {
      name: 'cancellation interrupts',
      memory: WATCHING,
      observation: { kind: 'cancelled', reason: 'SIGTERM' },
      decision: { kind: 'interrupted', reason: 'SIGTERM' },
      phases: [],
    },
  ] satisfies {
    name: string;
    memory: WaitMemory;
    observation: WaitObservation;
    decision: Record<string, unknown>;
    phases: string[];
  }[])('$name', ({ memory, observation, decision, phases }) => {
    const step = observeWait(CTX, memory, observation);
    expect(step.decision).toMatchObject(decision);
    expect(step.phases).toEqual(phases);
    expect(step.memory.over).toBe(!['wait-until', 'none'].includes(step.decision.kind));
  });
});

describe('observeWait: what it remembers', () => {
  it('never changes the memory it was given', () => {
    const memory = structuredClone(WATCHING);
    observeWait(CTX, memory, view(T0 + 10_000, [pod('Failed', { exitCode: 1 })], REPORTED));
    expect(memory).toEqual(WATCHING);
  });

  it('announces a phase and the report once each', () => {
    const first = observeWait(CTX, initialWaitMemory(LIVE, true), view(T0 + 100, [pod('Running')], REPORTED));
    expect(first.phases).toEqual(['pod Running', 'report received']);
    const again = observeWait(CTX, first.memory, view(T0 + 200, [pod('Running')], REPORTED));
    expect(again.phases).toEqual([]);
    expect(again.memory).toMatchObject({ lastPhase: 'Running', reportSeen: true });
  });

  it('keeps the last phase when the pod disappears', () => {
    const step = observeWait(CTX, { ...WATCHING, podSeen: false }, view(T0 + 100, []));
    expect(step.memory.lastPhase).toBe('Running');
    expect(step.phases).toEqual([]);
  });

  it('fails a pod that exited without reporting once the late-report grace is over, counted from when it was first seen', () => {
    const exitedAt = observeWait(CTX, WATCHING, view(T0 + 10_000, [pod('Failed', { exitCode: 1 })]));
    expect(exitedAt.memory.terminalSinceMs).toBe(T0 + 10_000);
    // Another event of the same pod does not restart the grace.
    const later = observeWait(CTX, exitedAt.memory, view(T0 + 12_000, [pod('Failed', { exitCode: 1 })]));
    expect(later.decision).toEqual({ kind: 'wait-until', untilMs: T0 + 15_000 });
    const over = observeWait(CTX, later.memory, tick(T0 + 15_000));
    expect(over.decision).toMatchObject({
      kind: 'finish',
      removePods: false,
      outcome: {
        kind: 'ExecutionError',
        errors: [`${PREFIX}checker pod ${POD} exited without reporting: container main exited with code 1`],
      },
    });
  });

  it('forgets when the pod turned terminal once another pod speaks for the run', () => {
    const old = observeWait(CTX, WATCHING, view(T0 + 10_000, [pod('Failed', { exitCode: 1 })]));
    const replacement = pod('Failed', { name: `${POD}-b`, createdMs: T0 + 20_000, exitCode: 1 });
    const step = observeWait(CTX, old.memory, view(T0 + 30_000, [replacement]));
    expect(step.memory.terminalSinceMs).toBe(T0 + 30_000);
    expect(step.decision).toEqual({ kind: 'wait-until', untilMs: T0 + 35_000 });
  });

  it('decides nothing more once a final decision was made', () => {
    const lost = observeWait(CTX, WATCHING, { kind: 'state', state: null, nowMs: T0 });
    expect(lost.memory.over).toBe(true);
    for (const next of [tick(T0 + 300_000), view(T0, [pod('Succeeded')], REPORTED)]) {
      const step = observeWait(CTX, lost.memory, next);
      expect(step).toEqual({ memory: lost.memory, decision: { kind: 'none' }, phases: [] });
    }
  });

  it('carries the pod it assessed into a finish decision', () => {
    const done = pod('Succeeded', { exitCode: 0 });
    const step = observeWait(CTX, WATCHING, view(T0 + 3_000, [done], REPORTED));
    expect(step.decision).toMatchObject({ kind: 'finish', pod: done });
  });
});

describe('pickRunPod', () => {
  const oldPod = pod('Running', { name: 'old', createdMs: T0, deleting: true });
  const newPod = pod('Pending', { name: 'new', createdMs: T0 + 1_000 });
  const newest = pod('Pending', { name: 'newest', createdMs: T0 + 2_000 });
  const foreign = pod('Running', { name: 'foreign', uuid: OTHER, createdMs: T0 + 9_000 });

  it.each([
    { name: 'no pods', pods: [], picked: undefined },
    { name: 'only another run’s pod', pods: [foreign], picked: undefined },
    { name: 'a replacement over the terminating pod it replaced', pods: [oldPod, newPod], picked: 'new' },
    { name: 'the terminating pod when it is the only one', pods: [oldPod, foreign], picked: 'old' },
    { name: 'the newest of equals', pods: [newPod, newest, foreign], picked: 'newest' },
  ])('picks $picked from $name', ({ pods, picked }) => {
    expect(pickRunPod(pods, UUID)?.metadata?.name).toBe(picked);
  });
});

describe('observeWait: a report delivered in-process', () => {
  const primed = (state: KhState = LIVE, p: V1Pod | undefined = pod('Running')): WaitMemory =>
    observeWait(CTX, initialWaitMemory(state, true), {
      kind: 'view',
      pods: p ? [p] : [],
      state,
      nowMs: T0 + 1_000,
    }).memory;
  const delivered = (atMs: number, ok = true): WaitObservation => ({
    kind: 'delivered',
    report: { ok, errors: ok ? [] : ['boom'], atMs },
    nowMs: atMs,
  });

  it('asks for the outcome to be written at once, while the pod still runs, and announces the report', () => {
    const step = observeWait(CTX, primed(), delivered(T0 + 2_000, false));
    expect(step.decision).toEqual({
      kind: 'record',
      outcome: {
        kind: 'Failed',
        ok: false,
        errors: ['boom'],
        node: 'node-1',
        durationMs: 2_000,
        reportedAtMs: T0 + 2_000,
      },
    });
    expect(step.phases).toEqual(['report received']);
  });

  it('declines a report past the deadline, after a stored one, for a run not held, or a second one', () => {
    const none = { kind: 'none' };
    expect(observeWait(CTX, primed(), delivered(RUN.deadlineMs + 1)).decision).toEqual(none);
    expect(observeWait(CTX, primed(REPORTED), delivered(T0 + 3_000)).decision).toEqual(none);
    const taken = stateWith({ ...RUN, holder: 'someone-else' });
    expect(observeWait(CTX, { ...primed(), state: taken }, delivered(T0 + 3_000)).decision).toEqual(none);
    const first = observeWait(CTX, primed(), delivered(T0 + 2_000));
    expect(observeWait(CTX, first.memory, delivered(T0 + 2_500)).decision).toEqual(none);
  });

  it('decides nothing while the write is in flight, not even from the watch showing the run closed', () => {
    const first = observeWait(CTX, primed(), delivered(T0 + 2_000));
    const view: WaitObservation = {
      kind: 'view',
      pods: [pod('Running')],
      state: stateWith(null),
      nowMs: T0 + 2_100,
    };
    expect(observeWait(CTX, first.memory, view).decision).toEqual({ kind: 'none' });
  });

  it('once written, waits for the pod to exit, and removes it after exitGraceMs since the report', () => {
    const first = observeWait(CTX, primed(), delivered(T0 + 2_000));
    const outcome = (first.decision as { outcome: unknown }).outcome;
    const written = observeWait(CTX, first.memory, {
      kind: 'recorded',
      result: { kind: 'recorded', outcome: outcome as never },
      nowMs: T0 + 2_050,
    });
    expect(written.decision).toEqual({ kind: 'wait-until', untilMs: T0 + 32_000 });
    const exited = observeWait(CTX, written.memory, {
      kind: 'view',
      pods: [pod('Succeeded', { exitCode: 0 })],
      state: stateWith(null),
      nowMs: T0 + 2_200,
    });
    expect(exited.decision).toMatchObject({ kind: 'finish', removePods: false, recorded: true });
    const hung = observeWait(CTX, written.memory, { kind: 'tick', nowMs: T0 + 32_000 });
    expect(hung.decision).toMatchObject({ kind: 'finish', removePods: true, recorded: true, outcome });
  });

  it('is lost when the write found the run taken, and goes on as before when it failed', () => {
    const first = observeWait(CTX, primed(), delivered(T0 + 2_000));
    const lost = observeWait(CTX, first.memory, {
      kind: 'recorded',
      result: { kind: 'superseded', holding: { kind: 'taken', by: 'runner-b' } },
      nowMs: T0 + 2_050,
    });
    expect(lost.decision).toMatchObject({ kind: 'superseded', taken: true });
    const failed = observeWait(CTX, first.memory, {
      kind: 'recorded',
      result: { kind: 'failed' },
      nowMs: T0 + 2_050,
    });
    expect(failed.decision).toEqual({ kind: 'wait-until', untilMs: RUN.deadlineMs });
    expect(failed.memory.delivered).toBeUndefined();
  });
});
