import { ApiException } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { validateCheck } from '../../lib/check/validate-check.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { runDeliveries } from '../../lib/run/deliveries.ts';
import type { RecordedOutcome } from '../../lib/run/events.ts';
import { reportInbox } from '../../lib/run/report-inbox.ts';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readAcceptedReport,
  readActiveRun,
  readLastOutcome,
} from '../../lib/state/khstate.ts';
import type { RunOutcome } from '../../lib/state/outcome.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { FakeApiError, FakeKube } from './fakes/fake-kube.ts';

// A report handed in by this process's endpoint is recorded by the run in one write: the outcome and the
// report as the endpoint would have stored it, on the khstate the wait holds. While the API server cannot
// be reached that write is held (timers are Vitest's fake ones, driven by the test), and a write whose
// answer was lost is looked for before it is made again.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

const source: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: NAME, namespace: NS, uid: 'uid-dns' },
  spec: {
    runInterval: '10m',
    timeout: '5m',
    podSpec: { containers: [{ name: 'main', image: 'ghcr.io/kuberhealthy/dns-check:v1.0.0' }] },
  },
};
const validated = validateCheck(source);
if (!validated.ok) throw new Error(validated.reason);
const CHECK = validated.check;

const RUN: ActiveRun = {
  uuid: '11111111-1111-4111-8111-111111111111',
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1767268800',
  runner: 'runner-a',
  holder: 'runner-a/invocation-1',
  leaseUntilMs: T0 + 150_000,
};
const RUN_REF = { namespace: NS, checkName: NAME, uuid: RUN.uuid, deadlineMs: RUN.deadlineMs };
const OUTCOME: RunOutcome = {
  kind: 'Succeeded',
  ok: true,
  errors: [],
  node: 'node-1',
  durationMs: 4_000,
  reportedAtMs: T0 + 4_000,
};
/** A 503 as client-node throws it (the API server restarting, or overloaded). */
const unavailable = () =>
  new ApiException(503, 'HTTP-Code: 503', JSON.stringify({ kind: 'Status', code: 503 }), {});

function harness() {
  const kube = new FakeKube();
  const state = newKhState(NAME, NS);
  state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(RUN) };
  const held = kube.putState(state);
  let nowMs = T0 + 4_000;
  const events: RecordedOutcome[] = [];
  const warn = vi.fn();
  const deps: AcquireDeps = {
    kube,
    clock: { nowMs: () => nowMs },
    ids: { runUuid: () => RUN.uuid },
    log: { info: vi.fn(), warn, error: vi.fn(), debug: vi.fn() },
    events: {
      outcomeRecorded: async (recorded) => {
        events.push(recorded);
      },
    },
  };
  const inbox = reportInbox();
  const controller = new AbortController();
  const run = runDeliveries(deps, CHECK, RUN, inbox, {
    runRef: RUN_REF,
    runner: 'runner-a',
    maxAttempts: 4,
    signal: controller.signal,
  });
  return {
    kube,
    held,
    inbox,
    run,
    events,
    warn,
    controller,
    setNow: (ms: number) => {
      nowMs = ms;
    },
  };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('runDeliveries', () => {
  it('records a delivered report in one write on the held khstate: the outcome and the report, then its Event', async () => {
    // Prepare
    const h = harness();
    // Act
    const written = await h.run.deliveries.record(OUTCOME, h.held);
    await h.run.announced();
    // Assess
    expect(written).toMatchObject({ kind: 'recorded', outcome: OUTCOME });
    expect(h.kube.calls).toMatchObject({ readState: 0, replaceState: 1 });
    const stored = h.kube.state(NS, NAME) ?? null;
    expect(readActiveRun(stored)).toBeUndefined();
    expect(readLastOutcome(stored)).toMatchObject({ uuid: RUN.uuid, kind: 'Succeeded' });
    expect(readAcceptedReport(stored)).toEqual({
      uuid: RUN.uuid,
      atMs: T0 + 4_000,
      ok: true,
      errors: [],
      pod: RUN.pod,
    });
    expect(h.events).toMatchObject([{ namespace: NS, name: NAME, runUuid: RUN.uuid, runner: 'runner-a' }]);
  });

  it('hands the inbox reports for its run to the receiver it opened, and declines them once closed', async () => {
    // Prepare
    const h = harness();
    const receiver = vi.fn(async () => 'recorded' as const);
    h.run.deliveries.open(receiver);
    const report = { ok: false, errors: ['nxdomain'], atMs: T0 + 3_000 };
    // Act
    const open = await h.inbox.deliver(RUN_REF, report);
    h.run.close();
    const closed = await h.inbox.deliver(RUN_REF, report);
    // Assess
    expect(open).toBe('recorded');
    expect(receiver).toHaveBeenCalledWith(report);
    expect(closed).toBe('absent');
  });

  it('holds the write while the API server is unavailable, backing off, then reads and writes', async () => {
    // Prepare: the first two writes fail with a 503.
    const h = harness();
    const replace = h.kube.replaceState.bind(h.kube);
    let failures = 2;
    vi.spyOn(h.kube, 'replaceState').mockImplementation(async (state) => {
      if (failures-- > 0) throw unavailable();
      return replace(state);
    });
    // Act
    const recording = h.run.deliveries.record(OUTCOME, h.held);
    await vi.advanceTimersByTimeAsync(250);
    await vi.advanceTimersByTimeAsync(500);
    const written = await recording;
    // Assess: each retry looked first (the failed write may have landed), then wrote.
    expect(written.kind).toBe('recorded');
    expect(h.warn.mock.calls.map(([, extra]) => extra)).toEqual([{ retryInMs: 250 }, { retryInMs: 500 }]);
    expect(h.kube.calls.readState).toBe(2);
    expect(readLastOutcome(h.kube.state(NS, NAME) ?? null)?.uuid).toBe(RUN.uuid);
  });

  it('finds a write that landed although its answer was lost, and does not write again', async () => {
    // Prepare: the write lands, its answer does not.
    const h = harness();
    const replace = h.kube.replaceState.bind(h.kube);
    let lost = true;
    const spy = vi.spyOn(h.kube, 'replaceState').mockImplementation(async (state) => {
      const stored = await replace(state);
      if (!lost) return stored;
      lost = false;
      throw unavailable();
    });
    // Act
    const recording = h.run.deliveries.record(OUTCOME, h.held);
    await vi.advanceTimersByTimeAsync(250);
    const written = await recording;
    // Assess
    expect(written).toMatchObject({ kind: 'recorded', outcome: OUTCOME });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(h.kube.calls.readState).toBe(1);
  });

  it('gives up once the hold is over (at the deadline of the run), with the API error', async () => {
    // Prepare: the API server stays down; the clock has passed the run's deadline.
    const h = harness();
    vi.spyOn(h.kube, 'replaceState').mockRejectedValue(unavailable());
    const recording = h.run.deliveries.record(OUTCOME, h.held).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(250);
    // Act
    h.setNow(RUN.deadlineMs);
    await vi.advanceTimersByTimeAsync(500);
    // Assess
    expect(await recording).toMatchObject({ code: 503 });
  });

  it('holds for at least 15 s even when the run is at its deadline already', async () => {
    // Prepare: the report arrived at the deadline; the API server stays down.
    const h = harness();
    h.setNow(RUN.deadlineMs);
    vi.spyOn(h.kube, 'replaceState').mockRejectedValue(unavailable());
    const recording = h.run.deliveries.record(OUTCOME, h.held).catch((e: unknown) => e);
    // Act: still held 14.999 s later; given up 15 s later.
    await vi.advanceTimersByTimeAsync(250);
    h.setNow(RUN.deadlineMs + 14_999);
    await vi.advanceTimersByTimeAsync(500);
    const warnedWhileHeld = h.warn.mock.calls.length;
    h.setNow(RUN.deadlineMs + 15_000);
    await vi.advanceTimersByTimeAsync(1_000);
    // Assess
    expect(warnedWhileHeld).toBe(3);
    expect(await recording).toMatchObject({ code: 503 });
    expect(h.warn).toHaveBeenCalledTimes(3);
  });

  it('gives up with the API error when the invocation is cancelled during the hold', async () => {
    // Prepare
    const h = harness();
    vi.spyOn(h.kube, 'replaceState').mockRejectedValue(unavailable());
    const recording = h.run.deliveries.record(OUTCOME, h.held).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(0);
    // Act
    h.controller.abort(new Error('SIGTERM'));
    // Assess
    expect(await recording).toMatchObject({ code: 503 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('lets a failure that is not the API server being away through at once', async () => {
    // Prepare
    const h = harness();
    vi.spyOn(h.kube, 'replaceState').mockRejectedValue(new FakeApiError(403, 'forbidden'));
    // Act
    const error = await h.run.deliveries.record(OUTCOME, h.held).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ code: 403 });
    expect(h.warn).not.toHaveBeenCalled();
  });

  it('announces nothing for a run another invocation holds now', async () => {
    // Prepare: adopted since by another invocation.
    const h = harness();
    const taken = h.kube.putState({
      ...h.held,
      metadata: {
        ...h.held.metadata,
        annotations: { [ANNOTATION.run]: JSON.stringify({ ...RUN, holder: 'runner-b/invocation-9' }) },
      },
    } as KhState);
    // Act
    const written = await h.run.deliveries.record(OUTCOME, taken);
    await h.run.announced();
    // Assess
    expect(written).toMatchObject({ kind: 'superseded' });
    expect(h.events).toEqual([]);
  });
});
