import type { V1PodStatus } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleReport, type ReportDeps } from '../../lib/report/handle-report.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { DEFAULT_TIMINGS, LATE_REPORT_GRACE_MS } from '../../lib/run/assess.ts';
import { type IterationConfig, type IterationResult, runIteration } from '../../lib/run/iteration.ts';
import { reportInbox } from '../../lib/run/report-inbox.ts';
import { type ActiveRun, readActiveRun, readLastOutcome } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';

// The late-report grace (lib/run/assess.ts, LATE_REPORT_GRACE_MS) on the run's default timings, with
// Vitest's clock: a checker pod exits without a report, and its report arrives after that exit.
// - within the grace: recorded as the report, whether it reaches the runner's own endpoint or is stored
//   by an external one;
// - after the grace: the run is recorded "exited without reporting", and the report is refused as late,
//   unless it was stored in the khstate before that outcome's write landed: then the write conflicts and
//   records the report. Either way one outcome, and no report answered 200 and lost.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2026, 5, 1, 8, 0, 0, 0);
const U1 = '11111111-1111-4111-8111-111111111111';
const silent = { info() {}, warn() {}, error() {}, debug() {} };
/** How the kubelet shows a checker that exited 3 without reporting. */
const EXITED: V1PodStatus = {
  phase: 'Failed',
  containerStatuses: [
    {
      name: 'main',
      image: 'img',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 3, reason: 'Error' } },
    },
  ],
};

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

/**
 * A run on the default timings. hosted: the runner hosts the endpoint its pod reports to (reports are
 * delivered in-process); else they go to an external server (`khrun serve`), which stores them in the
 * khstate, where the run sees them through its khstate watch.
 */
function harness(hosted: boolean) {
  const kube = new FakeKube();
  kube.putCheck(khcheck());
  const inbox = reportInbox();
  const deps: AcquireDeps = {
    kube,
    clock: { nowMs: () => Date.now() },
    ids: { runUuid: () => U1 },
    log: silent,
  };
  const endpoint: ReportDeps = {
    lookup: { podsByRunId: async () => [], livePodsByIp: async () => [] },
    state: { read: (ns, name) => kube.readState(ns, name), replace: (s) => kube.replaceState(s) },
    clock: deps.clock,
    log: silent,
    server: hosted ? 'runner-a' : 'khrun-serve',
    ...(hosted ? { deliver: inbox.deliver } : {}),
  };
  const cfg: IterationConfig = {
    namespace: NS,
    checkName: NAME,
    runner: 'runner-a',
    holder: 'runner-a/invocation-1',
    hostsReports: hosted,
    reportingUrl: 'http://10.0.0.1:8080/externalCheckStatus',
    ...(hosted ? { inbox } : {}),
    signal: new AbortController().signal,
  };
  let result: IterationResult | undefined;
  const start = async () => {
    const running = runIteration(deps, cfg);
    void running.then((r) => {
      result = r;
    });
    await kube.until(() => kube.watching === 1);
    const run = readActiveRun(kube.state(NS, NAME) ?? null) as ActiveRun;
    kube.setPodStatus(NS, run.pod, { phase: 'Running' });
    return { running, run };
  };
  /** What the checker sends to its URL (signed: it names the run). */
  const report = (run: ActiveRun) =>
    handleReport(endpoint, {
      method: 'POST',
      caller: {
        via: 'signed',
        run: { namespace: NS, checkName: NAME, uuid: run.uuid, deadlineMs: run.deadlineMs },
      },
      body: JSON.stringify({ OK: true, Errors: [] }),
    });
  const state = () => kube.state(NS, NAME) ?? null;
  return { kube, start, report, state, result: () => result };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the late-report grace', () => {
  it('is 500 ms on the default timings', () => {
    expect(LATE_REPORT_GRACE_MS).toBe(500);
    expect(DEFAULT_TIMINGS.lateReportGraceMs).toBe(LATE_REPORT_GRACE_MS);
  });

  it.each([
    ['the runner’s own endpoint', true],
    ['an external server, through the khstate watch', false],
  ])('a report that arrives within it after the exit is recorded as the report: %s', async (_, hosted) => {
    const h = harness(hosted);
    const { running, run } = await h.start();
    h.kube.setPodStatus(NS, run.pod, EXITED);
    await vi.advanceTimersByTimeAsync(LATE_REPORT_GRACE_MS - 10);
    expect(h.result(), 'nothing is decided within the grace').toBeUndefined();

    expect((await h.report(run)).status).toBe(200);
    expect(await running).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded', ok: true } });
    expect(readLastOutcome(h.state())).toMatchObject({ uuid: U1, kind: 'Succeeded' });
  });

  it.each([
    ['the runner’s own endpoint', true],
    ['an external server', false],
  ])('once it is over, the exit is recorded and a later report is refused as late: %s', async (_, hosted) => {
    const h = harness(hosted);
    const { running, run } = await h.start();
    h.kube.setPodStatus(NS, run.pod, EXITED);
    // The wait wakes at the grace's end (5 ms of timer slack) and records the exit at once.
    await vi.advanceTimersByTimeAsync(LATE_REPORT_GRACE_MS + 10);
    expect(h.result()).toMatchObject({ kind: 'recorded', outcome: { kind: 'ExecutionError', ok: false } });

    const late = await h.report(run);
    expect(late.status).toBe(400);
    expect(late.message).toMatch(/no active run: the report is late/);
    await running;
    const last = readLastOutcome(h.state());
    expect(last).toMatchObject({ uuid: U1, kind: 'ExecutionError' });
    expect(h.state()?.spec.Errors[0]).toMatch(/exited without reporting: container main exited with code 3/);
  });

  it('after it, a report stored before the exit’s outcome write landed wins: that write conflicts and records the report', async () => {
    const h = harness(false);
    const { running, run } = await h.start();
    // The report reaches the external server just as the runner writes "exited without reporting": the
    // server's store lands first, so the runner's write (on the version it held) conflicts.
    const replace = h.kube.replaceState.bind(h.kube);
    let stored: Promise<{ status: number }> | undefined;
    h.kube.replaceState = async (next: KhState, writer?: string) => {
      if (writer === 'record' && !stored) {
        stored = h.report(run);
        expect((await stored).status).toBe(200);
      }
      return replace(next);
    };
    h.kube.setPodStatus(NS, run.pod, EXITED);
    await vi.advanceTimersByTimeAsync(LATE_REPORT_GRACE_MS + 10);

    expect(stored, 'the report raced the outcome write').toBeDefined();
    expect(await running).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded', ok: true } });
    expect(readLastOutcome(h.state())).toMatchObject({ uuid: U1, kind: 'Succeeded' });
    expect(h.kube.conflicts.length).toBeGreaterThan(0);
  });
});
