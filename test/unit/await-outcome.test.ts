import { getEventListeners } from 'node:events';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type AwaitDeps, awaitOutcome, tickDelayMs, type WaitResult } from '../../lib/run/await-outcome.ts';
import { type ActiveRun, ANNOTATION, newKhState, readActiveRun } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';
import { ManualScheduler, settle } from './fakes/manual-scheduler.ts';

const NS = 'checks';
const NAME = 'dns';
const T0 = 1_700_000_000_000;
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const POD = 'dns-1700000000';
const DAY_MS = 86_400_000;
const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: POD,
  runner: 'runner-a',
  leaseUntilMs: T0 + 30_000,
};

function stateWith(run: ActiveRun | null, reportAtMs?: number): KhState {
  const state = newKhState(NAME, NS);
  state.metadata.annotations = run ? { [ANNOTATION.run]: JSON.stringify(run) } : {};
  if (reportAtMs !== undefined) {
    state.metadata.annotations[ANNOTATION.report] = JSON.stringify({
      uuid: UUID,
      atMs: reportAtMs,
      ok: true,
      errors: [],
      pod: POD,
    });
  }
  return state;
}

function checkerPod(phase: string): V1Pod {
  return {
    metadata: {
      name: POD,
      namespace: NS,
      labels: { 'kuberhealthy-run-id': UUID, 'kuberhealthy-check-name': NAME },
      creationTimestamp: new Date(T0),
    },
    spec: { nodeName: 'node-1', containers: [{ name: 'main', image: 'img' }] },
    status: { phase },
  };
}

/** A wait on RUN over a fake API server, with a scheduler and clock the test drives. */
function harness(opts: { run?: ActiveRun; pod?: V1Pod | null; kube?: FakeKube } = {}) {
  const run = opts.run ?? RUN;
  const kube = opts.kube ?? new FakeKube();
  const scheduler = new ManualScheduler(T0);
  const initialState = kube.putState(stateWith(run));
  if (opts.pod !== null) kube.putPod(opts.pod ?? checkerPod('Running'));
  const controller = new AbortController();
  const phases: string[] = [];
  const warnings: { message: string; extra?: Record<string, unknown> }[] = [];
  const deps: AwaitDeps = {
    kube,
    clock: scheduler,
    scheduler,
    log: { info() {}, debug() {}, error() {}, warn: (message, extra) => warnings.push({ message, extra }) },
  };
  let result: WaitResult | undefined;
  let waiting: Promise<WaitResult> | undefined;
  const start = () => {
    waiting = awaitOutcome(
      deps,
      { namespace: NS, checkName: NAME, run, initialState },
      {
        timings: { exitGraceMs: 30_000, lateReportGraceMs: 5_000 },
        leaseMs: 30_000,
        runner: 'runner-a',
        signal: controller.signal,
        onPhase: (phase) => phases.push(phase),
      },
    );
    void waiting.then((r) => {
      result = r;
    });
    return waiting;
  };
  /** Cancels the wait and lets it end, as a test that has seen what it wanted must. */
  const stop = async () => {
    controller.abort('test over');
    await waiting;
  };
  /** Nothing the wait started is left: no timer, no watch, no listener on the caller's signal. */
  const leftBehind = () => ({
    scheduled: scheduler.pending,
    watches: kube.watching,
    abortListeners: getEventListeners(controller.signal, 'abort').length,
  });
  return { kube, scheduler, controller, phases, warnings, start, stop, leftBehind, result: () => result };
}

const NOTHING = { scheduled: 0, watches: 0, abortListeners: 0 };

describe('awaitOutcome', () => {
  it('finishes with the report once the pod exited, and stops everything it started', async () => {
    const h = harness();
    const waiting = h.start();
    await h.kube.until(() => h.kube.watching === 1);
    await settle();
    expect(h.phases).toEqual(['pod Running']);
    // One wake-up at the deadline (the one asked before the first view was replaced), one lease renewal.
    expect(h.scheduler.pendingInMs).toEqual([15_000, 300_005]);

    h.kube.putState(stateWith(RUN, T0 + 1_000));
    h.kube.setPodStatus(NS, POD, { phase: 'Succeeded' });
    expect(await waiting).toMatchObject({
      kind: 'finished',
      removePods: false,
      outcome: { kind: 'Succeeded', ok: true, node: 'node-1', durationMs: 1_000 },
      pod: { metadata: { name: POD }, status: { phase: 'Succeeded' } },
    });
    expect(h.phases).toEqual(['pod Running', 'report received', 'pod Succeeded']);
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('wakes 5 ms after the deadline and times out, renewing the lease until then', async () => {
    // Renewals at 15 s, 30 s … 90 s; the next one would be at 105 s: only the wake-up falls in between.
    const run = { ...RUN, deadlineMs: T0 + 100_000 };
    const h = harness({ run, pod: checkerPod('Pending') });
    const waiting = h.start();
    await h.kube.until(() => h.kube.watching === 1);
    await h.scheduler.advanceByMs(100_004);
    expect(h.result()).toBeUndefined();
    expect(readActiveRun(h.kube.state(NS, NAME) ?? null)?.leaseUntilMs).toBe(T0 + 100_000);
    await h.scheduler.advanceByMs(1);
    expect(await waiting).toMatchObject({
      kind: 'finished',
      removePods: true,
      outcome: { kind: 'TimedOut' },
    });
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('asks for the whole delay of a far deadline: capping it is the timer scheduler’s job', async () => {
    const h = harness({ run: { ...RUN, deadlineMs: T0 + 40 * DAY_MS } });
    h.start();
    await h.kube.until(() => h.kube.watching === 1);
    await settle();
    expect(h.scheduler.pendingInMs).toEqual([15_000, 40 * DAY_MS + 5]);
    await h.stop();
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('renews the lease every half lease', async () => {
    const h = harness();
    h.start();
    await h.kube.until(() => h.kube.watching === 1);
    await h.scheduler.runNext();
    expect(h.scheduler.nowMs()).toBe(T0 + 15_000);
    expect(readActiveRun(h.kube.state(NS, NAME) ?? null)).toEqual({ ...RUN, leaseUntilMs: T0 + 45_000 });
    expect(h.scheduler.pendingInMs).toEqual([15_000, 285_005]);
    await h.stop();
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('retries a failed renewal at once and logs it', async () => {
    const kube = new FakeKube();
    const replace = kube.replaceState.bind(kube);
    let failures = 1;
    kube.replaceState = async (state) => {
      if (failures-- > 0) throw new Error('etcdserver: request timed out');
      return replace(state);
    };
    const h = harness({ kube });
    h.start();
    await h.kube.until(() => h.kube.watching === 1);
    await h.scheduler.runNext();
    expect(h.warnings).toEqual([
      {
        message: 'lease renewal failed; retrying',
        extra: { error: 'Error: etcdserver: request timed out', failures: 1, retryInMs: 100 },
      },
    ]);
    await h.scheduler.runNext();
    expect(readActiveRun(h.kube.state(NS, NAME) ?? null)?.leaseUntilMs).toBe(T0 + 15_100 + 30_000);
    await h.stop();
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('is lost when another invocation closes the run', async () => {
    const h = harness();
    const waiting = h.start();
    await h.kube.until(() => h.kube.watching === 1);
    h.kube.putState(stateWith(null));
    expect(await waiting).toEqual({
      kind: 'superseded',
      reason: 'the run was closed by another invocation',
      taken: false,
    });
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('is lost, taken, when another invocation adopted the run, and never takes it back', async () => {
    const h = harness();
    const waiting = h.start();
    await h.kube.until(() => h.kube.watching === 1);
    const adopted = {
      ...RUN,
      runner: 'runner-b',
      holder: 'runner-b/invocation-2',
      leaseUntilMs: T0 + 99_000,
    };
    h.kube.putState(stateWith(adopted));
    expect(await waiting).toMatchObject({ kind: 'superseded', taken: true });
    expect(readActiveRun(h.kube.state(NS, NAME) ?? null)).toEqual(adopted);
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('is lost when the lease renewal finds the khstate gone; a watch that loses sight of it proves nothing', async () => {
    const h = harness();
    const waiting = h.start();
    await h.kube.until(() => h.kube.watching === 1);
    const stored = h.kube.state(NS, NAME);
    await h.kube.deleteState(NS, NAME, stored?.metadata.resourceVersion ?? '');
    await settle();
    expect(h.result()).toBeUndefined();
    await h.scheduler.runNext();
    expect(await waiting).toMatchObject({ kind: 'superseded' });
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('is interrupted when the signal aborts, with its reason, and leaves nothing behind', async () => {
    const h = harness();
    const waiting = h.start();
    await h.kube.until(() => h.kube.watching === 1);
    h.controller.abort('SIGTERM');
    expect(await waiting).toEqual({ kind: 'interrupted', reason: 'SIGTERM' });
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('is interrupted at once when the signal is already aborted, and renews nothing', async () => {
    const h = harness();
    h.controller.abort('budget spent');
    expect(await h.start()).toEqual({ kind: 'interrupted', reason: 'budget spent' });
    expect(h.scheduler.requestedMs).toEqual([]);
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('is interrupted when the watch fails', async () => {
    const kube = new FakeKube();
    kube.watchRun = () => Promise.reject(new Error('forbidden: pods is forbidden'));
    const h = harness({ kube });
    expect(await h.start()).toEqual({
      kind: 'interrupted',
      reason: 'watch failed: Error: forbidden: pods is forbidden',
    });
    expect(h.leftBehind()).toEqual(NOTHING);
  });

  it('takes a pod absent from the first view as deleted (the driver created it before waiting)', async () => {
    const h = harness({ pod: null });
    h.start();
    await h.kube.until(() => h.kube.watching === 1 || h.result() !== undefined);
    await settle();
    expect(h.result()).toMatchObject({ kind: 'finished', outcome: { kind: 'Skipped' } });
    await h.stop();
    expect(h.leftBehind()).toEqual(NOTHING);
  });
});

describe('tickDelayMs', () => {
  it.each([
    { untilMs: T0 + 1_000, nowMs: T0, delayMs: 1_005 },
    { untilMs: T0, nowMs: T0, delayMs: 5 },
    { untilMs: T0 - 1_000, nowMs: T0, delayMs: 5 },
  ])('waits $delayMs ms for $untilMs at $nowMs', ({ untilMs, nowMs, delayMs }) => {
    expect(tickDelayMs(untilMs, nowMs)).toBe(delayMs);
  });
});
