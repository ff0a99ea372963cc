import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CHECK_NAME_LABEL, podNameFor, RUN_ID_LABEL } from '../../lib/check/pod-builder.ts';
import { handleReport, type ReportDeps } from '../../lib/report/handle-report.ts';
import type { RunRef } from '../../lib/report/report-token.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { awaitOutcome } from '../../lib/run/await-outcome.ts';
import { ITERATION_DEFAULTS, type IterationConfig, runIteration } from '../../lib/run/iteration.ts';
import { holdReports, reportInbox } from '../../lib/run/report-inbox.ts';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readAcceptedReport,
  readActiveRun,
  readLastOutcome,
} from '../../lib/state/khstate.ts';
import type { KhCheck } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';
import { ManualScheduler, settle } from './fakes/manual-scheduler.ts';

// What one run costs the API server, counted on the in-memory one (FakeKube.requests names each call as
// the audit log would): the budget of issue 15, point 3.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2024, 2, 5, 10, 20, 30, 0);
const U1 = '11111111-1111-4111-8111-111111111111';
const silent = { info() {}, warn() {}, error() {}, debug() {} };

function khcheck(): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: NAME, namespace: NS, uid: 'uid-dns' },
    spec: {
      runInterval: '10m',
      timeout: '2m',
      podSpec: { containers: [{ name: 'main', image: 'ghcr.io/kuberhealthy/dns-check:v1.0.0' }] },
    },
  };
}

/** A finished pod of an earlier run, as khrun created it (owned by the khcheck). */
function finishedPod(i: number): V1Pod {
  return {
    metadata: {
      name: `${NAME}-old-${i}`,
      namespace: NS,
      labels: { [RUN_ID_LABEL]: `earlier-${i}`, [CHECK_NAME_LABEL]: NAME },
      ownerReferences: [
        { apiVersion: 'comcast.github.io/v1', kind: 'KuberhealthyCheck', name: NAME, uid: 'uid-dns' },
      ],
      creationTimestamp: new Date(T0 - (i + 1) * 600_000),
    },
    spec: { containers: [{ name: 'main', image: 'img' }] },
    status: { phase: 'Succeeded' },
  };
}

/** A runner hosting its endpoint: an inbox the endpoint's handleReport delivers to, both on one fake. */
function hosted() {
  const kube = new FakeKube();
  kube.putCheck(khcheck());
  // keepFinishedPods earlier pods and one more: the run trims one, as every run does in a steady state.
  for (let i = 0; i <= ITERATION_DEFAULTS.keepFinishedPods; i++) kube.putPod(finishedPod(i));
  kube.requests.length = 0;
  const inbox = reportInbox();
  const deps: AcquireDeps = {
    kube,
    clock: { nowMs: () => Date.now() },
    ids: { runUuid: () => U1 },
    log: silent,
    events: {
      outcomeRecorded: async () => {
        kube.requests.push('create events');
      },
    },
  };
  const endpoint: ReportDeps = {
    lookup: { podsByRunId: async () => [], livePodsByIp: async () => [] },
    state: { read: (ns, name) => kube.readState(ns, name), replace: (s) => kube.replaceState(s) },
    clock: deps.clock,
    log: silent,
    server: 'runner-a',
    deliver: inbox.deliver,
  };
  const cfg: IterationConfig = {
    namespace: NS,
    checkName: NAME,
    runner: 'runner-a',
    holder: 'runner-a/invocation-1',
    hostsReports: true,
    reportingUrl: 'http://10.0.0.1:8080/externalCheckStatus',
    inbox,
    signal: new AbortController().signal,
  };
  return { kube, deps, endpoint, cfg, inbox };
}

/** What the checker pod sends to its signed URL. */
const postReport = (endpoint: ReportDeps, run: RunRef, ok = true) =>
  handleReport(endpoint, {
    method: 'POST',
    caller: { via: 'signed', run },
    body: JSON.stringify({ OK: ok, Errors: ok ? [] : ['dns lookup failed'] }),
  });

const runRefOf = (run: ActiveRun): RunRef => ({
  namespace: NS,
  checkName: NAME,
  uuid: run.uuid,
  deadlineMs: run.deadlineMs,
});

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the API cost of a run whose pod reports at once to the endpoint its runner hosts', () => {
  it('is at most 9 requests: the report becomes the outcome in one write, and no khstate is watched', async () => {
    const h = hosted();
    const running = runIteration(h.deps, h.cfg);
    await h.kube.until(() => h.kube.watching === 1);
    const run = readActiveRun(h.kube.state(NS, NAME) ?? null) as ActiveRun;
    h.kube.setPodStatus(NS, run.pod, { phase: 'Running' });

    const answer = await postReport(h.endpoint, runRefOf(run));
    expect(answer.status).toBe(200);
    h.kube.setPodStatus(NS, run.pod, { phase: 'Succeeded' });
    const result = await running;

    expect(result).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded', ok: true } });
    expect(h.kube.requests).toEqual([
      'get khchecks',
      'get khstates', // the claim's read
      'create khstates', // the claim (the first run's; later runs update)
      'list pods', // clears earlier pods and starts the pod watch
      'delete pods', // the oldest finished pod beyond keepFinishedPods
      'create pods',
      'watch pods',
      'update khstates', // the report, recorded as the outcome on the claim's version: no read first
      'create events',
    ]);
    expect(h.kube.requests.length).toBeLessThanOrEqual(9);
  });

  it('does not try a pod name the list shows taken (an earlier run of the same second): one create', async () => {
    const h = hosted();
    const earlier = finishedPod(9);
    h.kube.putPod({ ...earlier, metadata: { ...earlier.metadata, name: podNameFor(NAME, T0) } });
    h.kube.requests.length = 0;
    const running = runIteration(h.deps, h.cfg);
    await h.kube.until(() => h.kube.watching === 1);
    const run = readActiveRun(h.kube.state(NS, NAME) ?? null) as ActiveRun;
    expect((await postReport(h.endpoint, runRefOf(run))).status).toBe(200);
    const [pod] = h.kube.podsOfRun(U1);
    h.kube.setPodStatus(NS, pod?.metadata?.name ?? '', { phase: 'Succeeded' });
    expect(await running).toMatchObject({ kind: 'recorded' });
    expect(h.kube.requests.filter((r) => r === 'create pods')).toHaveLength(1);
    expect(pod?.metadata?.name).toMatch(new RegExp(`^${podNameFor(NAME, T0)}-[0-9a-z]+$`));
    expect(h.kube.conflicts).toEqual([]);
  });

  it('answers 200 only once the outcome is written, and keeps the pod that exits by itself', async () => {
    const h = hosted();
    const running = runIteration(h.deps, h.cfg);
    await h.kube.until(() => h.kube.watching === 1);
    const run = readActiveRun(h.kube.state(NS, NAME) ?? null) as ActiveRun;

    const answer = await postReport(h.endpoint, runRefOf(run), false);
    expect(answer.status).toBe(200);
    const state = h.kube.state(NS, NAME) ?? null;
    expect(readActiveRun(state)).toBeUndefined();
    expect(readLastOutcome(state)).toMatchObject({ uuid: U1, kind: 'Failed' });
    expect(state?.spec.OK).toBe(false);
    // The report is kept as the endpoint would have stored it (khrun describe shows it).
    expect(readAcceptedReport(state)).toMatchObject({ uuid: U1, ok: false, errors: ['dns lookup failed'] });
    // The run waits for its pod to exit (exitGraceMs), on the watch it has.
    await settle();
    expect(h.kube.watching).toBe(1);
    h.kube.setPodStatus(NS, run.pod, { phase: 'Succeeded' });
    expect(await running).toMatchObject({ kind: 'recorded', outcome: { kind: 'Failed' } });
    expect(h.kube.podsOfRun(U1)).toHaveLength(1);
    // A second report of the run finds nobody waiting: stored the usual way, which refuses it (no active run).
    expect((await postReport(h.endpoint, runRefOf(run))).status).toBe(400);
  });

  it('removes a pod still running exitGraceMs after its report (a sidecar that never stops)', async () => {
    const h = hosted();
    const running = runIteration(h.deps, {
      ...h.cfg,
      timings: { exitGraceMs: 30_000, lateReportGraceMs: 5_000 },
    });
    await h.kube.until(() => h.kube.watching === 1);
    const run = readActiveRun(h.kube.state(NS, NAME) ?? null) as ActiveRun;
    h.kube.setPodStatus(NS, run.pod, { phase: 'Running' });
    expect((await postReport(h.endpoint, runRefOf(run))).status).toBe(200);
    await vi.advanceTimersByTimeAsync(30_010);
    expect(await running).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded' } });
    expect(h.kube.podsOfRun(U1)).toHaveLength(0);
  });

  it('declines a report when the run was taken over meanwhile: it is stored for the adopter', async () => {
    const h = hosted();
    const running = runIteration(h.deps, h.cfg);
    await h.kube.until(() => h.kube.watching === 1);
    const run = readActiveRun(h.kube.state(NS, NAME) ?? null) as ActiveRun;
    // Another invocation adopted the run (this one's lease lapsed, say): the record write's precondition fails.
    const taken = h.kube.state(NS, NAME);
    if (!taken?.metadata.annotations) throw new Error('no khstate');
    taken.metadata.annotations[ANNOTATION.run] = JSON.stringify({
      ...run,
      runner: 'runner-b',
      holder: 'b/1',
    });
    h.kube.putState(taken);

    const answer = await postReport(h.endpoint, runRefOf(run));
    expect(answer.status).toBe(200);
    const stored = h.kube.state(NS, NAME) ?? null;
    expect(readActiveRun(stored)?.holder).toBe('b/1');
    expect(stored?.metadata.annotations?.[ANNOTATION.report]).toContain(U1);
    h.kube.deletePod(NS, run.pod);
    expect(await running).toMatchObject({ kind: 'superseded' });
  });
});

describe('a delivered report while the API server cannot be reached', () => {
  const unavailable = () => Object.assign(new Error('service unavailable'), { statusCode: 503 });

  it.each([
    ['its write refused', false],
    ['its write landed but the answer lost', true],
  ])('waits for it and records the report once (%s)', async (_, lands) => {
    const h = hosted();
    const running = runIteration(h.deps, h.cfg);
    await h.kube.until(() => h.kube.watching === 1);
    const run = readActiveRun(h.kube.state(NS, NAME) ?? null) as ActiveRun;
    const replace = h.kube.replaceState.bind(h.kube);
    let outage = 1;
    h.kube.replaceState = async (state) => {
      if (outage-- <= 0) return replace(state);
      if (lands) await replace(state);
      throw unavailable();
    };
    const answering = postReport(h.endpoint, runRefOf(run));
    await vi.advanceTimersByTimeAsync(300);
    expect((await answering).status).toBe(200);
    h.kube.setPodStatus(NS, run.pod, { phase: 'Succeeded' });
    expect(await running).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded' } });
    const recorded = h.kube.stateHistory.filter((s) => readLastOutcome(s)?.uuid === U1);
    expect(recorded.length).toBe(1);
  });
});

describe('the report inbox', () => {
  const ref = (uuid: string, checkName = NAME): RunRef => ({
    namespace: NS,
    checkName,
    uuid,
    deadlineMs: T0 + 1,
  });
  const report = { ok: true, errors: [], atMs: T0 };

  it('routes by run UUID, and only for the check the URL names', async () => {
    const inbox = reportInbox();
    const got: string[] = [];
    inbox.open(ref('a'), async () => {
      got.push('a');
      return 'recorded';
    });
    const closeB = inbox.open(ref('b'), async () => 'declined');
    expect(await inbox.deliver(ref('a'), report)).toBe('recorded');
    expect(await inbox.deliver(ref('b'), report)).toBe('declined');
    expect(await inbox.deliver(ref('a', 'other-check'), report)).toBe('absent');
    expect(await inbox.deliver(ref('c'), report)).toBe('absent');
    closeB();
    expect(await inbox.deliver(ref('b'), report)).toBe('absent');
    expect(got).toEqual(['a']);
  });

  it('holds a report that came before the run started waiting, and declines it once closed', async () => {
    const inbox = reportInbox();
    const held = holdReports(inbox, ref('a'));
    const early = inbox.deliver(ref('a'), report);
    const detach = held.attach(async () => 'recorded');
    expect(await early).toBe('recorded');
    detach();
    expect(await inbox.deliver(ref('a'), report)).toBe('absent');

    const other = holdReports(inbox, ref('b'));
    const waiting = inbox.deliver(ref('b'), report);
    other.close();
    expect(await waiting).toBe('declined');
  });
});

describe('the lease during a long check', () => {
  it('is written when a minute of it is left (every 90 s), with no read before the write', async () => {
    const kube = new FakeKube();
    const scheduler = new ManualScheduler(T0);
    const run: ActiveRun = {
      uuid: U1,
      startedAtMs: T0,
      deadlineMs: T0 + 10 * 60_000,
      pod: 'dns-1',
      runner: 'runner-a',
      holder: 'runner-a/1',
      leaseUntilMs: T0 + ITERATION_DEFAULTS.leaseMs,
    };
    const state = newKhState(NAME, NS);
    state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(run) };
    const initialState = kube.putState(state);
    kube.putPod({
      ...finishedPod(0),
      metadata: { name: 'dns-1', namespace: NS, labels: { [RUN_ID_LABEL]: U1 } },
    });
    kube.setPodStatus(NS, 'dns-1', { phase: 'Running' });
    kube.requests.length = 0;
    const waiting = awaitOutcome(
      { kube, clock: scheduler, scheduler, log: silent },
      { namespace: NS, checkName: NAME, run, initialState },
      {
        timings: { exitGraceMs: 30_000, lateReportGraceMs: 5_000 },
        leaseMs: ITERATION_DEFAULTS.leaseMs,
        runner: 'runner-a',
        signal: new AbortController().signal,
        watchState: false,
      },
    );
    await kube.until(() => kube.watching === 1);
    const writesAt: number[] = [];
    const count = () => kube.requests.filter((r) => r === 'update khstates').length;
    while (scheduler.pending > 0) {
      const before = count();
      await scheduler.runNext();
      await settle();
      if (count() > before) writesAt.push(scheduler.nowMs() - T0);
    }
    expect(await waiting).toMatchObject({ kind: 'finished', outcome: { kind: 'TimedOut' } });
    // A 10-minute check: a renewal every 90 s (a minute of the 150 s lease left) until the lease reaches
    // the deadline (the one at 450 s).
    expect(writesAt).toEqual([90, 180, 270, 360, 450].map((s) => s * 1_000));
    expect(kube.requests.filter((r) => r === 'get khstates')).toEqual([]);
  });
});
