import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type Invocation,
  JOB_UID,
  type KindHarness,
  type KindName,
  kindHarness,
  LEASE_MS,
  RUN_UUIDS,
  TIMEOUT_MS,
} from './fakes/kind-harness.ts';

// The run engine's contract (lib/run/iteration.ts), once for every kind of object it runs: a khcheck
// through the plain KubePort, a khjob through its job port (runKhJob), a HealthCheck through the
// HealthCheck port. Each behaviour is asserted on what the kind's own state says (a khstate, or the
// HealthCheck's status), read through the harness's stateOf, so the assertions are written once; where a
// kind legitimately differs, the difference is data in its case below, not a branch in a test.
// Time is Vitest's fake timers (Date included), as in iteration.test.ts: the engine schedules its deadline
// and lease renewals on the global timers (AcquireDeps takes no Scheduler), so manual-scheduler.ts cannot
// drive it. Nothing sleeps: every step awaits a condition of the fakes or an invocation's result.

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const [U1, U2] = RUN_UUIDS;
/** A UUID no run of the object ever had. */
const STRANGER = '99999999-9999-4999-8999-999999999999';

interface KindCase {
  kind: KindName;
  /** The UUID of the object's first run: drawn by the engine, except a khjob's, which its uid names. */
  firstRun: string;
  /** The label a checker pod carries its run's UUID in. */
  runLabel: string;
  /** How an execution error is worded (v2 says "Job" for a khjob's). */
  errorPrefix: string;
  /** The HTTP status a report for a run that is not the current one gets: v2's 400, v3's 410 Gone. */
  notCurrentStatus: number;
  /**
   * What the next invocation after a recorded run does: a khcheck or HealthCheck is run again (a new run,
   * a new pod); a khjob runs once, so it says it already ran.
   */
  rerun: 'new pod' | 'already-ran';
  /**
   * After a stale run (its runner gone, its deadline passed) is closed by the next invocation: a khcheck
   * or HealthCheck has that invocation's new run in progress; a khjob is closed and nothing runs.
   */
  afterStaleClose: { runUuid: string; pods: number };
}

const CHECK_ERROR = 'Check execution error: ';
const KINDS: KindCase[] = [
  {
    kind: 'khcheck',
    firstRun: U1,
    runLabel: 'kuberhealthy-run-id',
    errorPrefix: CHECK_ERROR,
    notCurrentStatus: 400,
    rerun: 'new pod',
    afterStaleClose: { runUuid: U2, pods: 1 },
  },
  {
    kind: 'khjob',
    firstRun: JOB_UID,
    runLabel: 'kuberhealthy-run-id',
    errorPrefix: 'Job execution error: ',
    notCurrentStatus: 400,
    rerun: 'already-ran',
    afterStaleClose: { runUuid: '', pods: 0 },
  },
  {
    kind: 'healthcheck',
    firstRun: U1,
    runLabel: 'kh-run-uuid', // v3's label
    errorPrefix: CHECK_ERROR,
    notCurrentStatus: 410,
    rerun: 'new pod',
    afterStaleClose: { runUuid: U2, pods: 1 },
  },
];

const nameOf = (pod: V1Pod | undefined) => pod?.metadata?.name ?? '';
const succeeded: V1PodStatus = {
  phase: 'Succeeded',
  containerStatuses: [
    {
      name: 'main',
      image: 'img',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0, reason: 'Completed' } },
    },
  ],
};

/** Stops an invocation that is still waiting and lets it return (a finished one is left as it is). */
async function stop(inv: Invocation) {
  inv.controller.abort('test over');
  return inv.result;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => vi.useRealTimers());

describe.each(KINDS)('the run engine’s contract: $kind', (kase) => {
  let h: KindHarness;
  beforeEach(() => {
    h = kindHarness(kase.kind);
  });

  /** Plays the checker pod of run uuid to the end: running, a report after 2 s, exited. */
  async function checkerReports(uuid: string, result: { ok: boolean; errors: string[] }) {
    await h.until(() => h.podsOfRun(uuid).length === 1);
    const pod = nameOf(h.podsOfRun(uuid)[0]);
    h.setPodStatus(pod, { phase: 'Running' });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await h.report(uuid, result)).toBe(200);
    h.setPodStatus(pod, succeeded);
  }

  describe('1. claim', () => {
    it('claims a due object’s run (its UUID in the state) and creates one checker pod with the run’s label', async () => {
      const a = h.invoke('runner-a');
      await h.until(() => h.createdPods().length === 1);
      expect(h.stateOf()).toMatchObject({ runUuid: kase.firstRun, holder: 'runner-a/1' });
      expect(h.createdPods()[0]?.metadata?.labels?.[kase.runLabel]).toBe(kase.firstRun);
      expect(await stop(a)).toMatchObject({ kind: 'interrupted', runUuid: kase.firstRun });
      expect(h.createdPods()).toHaveLength(1);
    });

    it('the next invocation after a recorded run: runs it again, or (a khjob) says it already ran', async () => {
      const a = h.invoke('runner-a');
      await checkerReports(kase.firstRun, { ok: true, errors: [] });
      expect(await a.result).toMatchObject({ kind: 'recorded', runUuid: kase.firstRun });
      await vi.advanceTimersByTimeAsync(600_000);

      const b = h.invoke('runner-b');
      const first = await Promise.race([
        b.result.then((r) => r.kind),
        h.until(() => h.createdPods().length === 2).then(() => 'new pod'),
      ]);
      expect(first).toBe(kase.rerun);
      await stop(b);
      expect(h.stateOf().lastUuid).toBe(kase.firstRun);
    });
  });

  describe('2. busy', () => {
    it('does not run an object whose run another live runner holds: the result says busy, no second pod', async () => {
      const a = h.invoke('runner-a');
      await h.until(() => h.createdPods().length === 1);
      const before = h.stateVersion();

      const b = await h.invoke('runner-b').result;
      expect(b).toMatchObject({ kind: 'busy', runUuid: kase.firstRun });
      expect(h.createdPods()).toHaveLength(1);
      expect(h.stateVersion()).toBe(before);
      expect(h.stateOf()).toMatchObject({ runUuid: kase.firstRun, holder: 'runner-a/1' });
      await stop(a);
    });
  });

  describe('3. adopt a killed run', () => {
    it('the next invocation adopts a run whose lease lapsed and finishes it, keeping the old pod (no duplicate)', async () => {
      const a = h.invoke('runner-a');
      await h.until(() => h.createdPods().length === 1);
      a.cut(); // killed: it renews nothing and records nothing from now on
      await vi.advanceTimersByTimeAsync(LEASE_MS + 1_000);

      const b = h.invoke('runner-b');
      await h.until(() => h.stateOf().holder === 'runner-b/2');
      expect(h.stateOf().runUuid).toBe(kase.firstRun);
      // The old pod may still report (nothing says its endpoint is dead): it is kept, none created.
      expect(h.createdPods()).toHaveLength(1);
      expect(h.podsOfRun(kase.firstRun)).toHaveLength(1);

      await checkerReports(kase.firstRun, { ok: true, errors: [] });
      expect(await b.result).toMatchObject({ kind: 'recorded', runUuid: kase.firstRun, adopted: true });
      expect(h.createdPods()).toHaveLength(1);
      expect(h.stateOf()).toMatchObject({ runUuid: '', holder: '', lastUuid: kase.firstRun, ok: true });
    });
  });

  describe('4. time out', () => {
    it('records a checker that never reports as timed out after the timeout, and removes its pod', async () => {
      const a = h.invoke('runner-a');
      await h.until(() => h.createdPods().length === 1);
      h.setPodStatus(nameOf(h.createdPods()[0]), { phase: 'Running' });

      await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1_000);
      expect(h.stateOf().runUuid).toBe(kase.firstRun);
      expect(h.podsOfRun(kase.firstRun)).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(2_000);

      expect(await a.result).toMatchObject({
        kind: 'recorded',
        runUuid: kase.firstRun,
        outcome: { kind: 'TimedOut', ok: false },
      });
      const state = h.stateOf();
      expect(state).toMatchObject({ runUuid: '', holder: '', lastUuid: kase.firstRun, ok: false });
      expect(state.errors).toHaveLength(1);
      expect(state.errors[0]).toMatch(
        new RegExp(`^${kase.errorPrefix}checks/web: timed out waiting for checker pod to report in`),
      );
      expect(state.lastRunMs).toBeGreaterThanOrEqual(T0 + TIMEOUT_MS);
      expect(h.podsOfRun(kase.firstRun)).toEqual([]);
    });
  });

  describe('5. record', () => {
    it.each([
      { name: 'ok', report: { ok: true, errors: [] } },
      { name: 'with errors', report: { ok: false, errors: ['upstream 503', 'retry budget spent'] } },
    ])('records a report ($name) as the outcome in the object’s state', async ({ report }) => {
      const a = h.invoke('runner-a');
      await checkerReports(kase.firstRun, report);
      expect(await a.result).toMatchObject({
        kind: 'recorded',
        runUuid: kase.firstRun,
        adopted: false,
        outcome: { ok: report.ok, errors: report.errors },
      });
      expect(h.stateOf()).toEqual({
        runUuid: '',
        holder: '',
        lastUuid: kase.firstRun,
        ok: report.ok,
        errors: report.errors,
        lastRunMs: T0 + 2_000,
      });
    });
  });

  describe('6. refuse a foreign run', () => {
    it('refuses a report for a UUID that is not the current run, leaving the state as it was', async () => {
      const a = h.invoke('runner-a');
      await h.until(() => h.createdPods().length === 1);
      const [before, version] = [h.stateOf(), h.stateVersion()];

      expect(await h.report(STRANGER, { ok: false, errors: ['forged'] })).toBe(kase.notCurrentStatus);
      expect(h.stateOf()).toEqual(before);
      expect(h.stateVersion()).toBe(version);
      await stop(a);
    });

    it('refuses the late report and the late finish of a run closed by another invocation', async () => {
      const a = h.invoke('runner-a');
      await h.until(() => h.createdPods().length === 1);
      a.cut(); // cut off past its deadline: its run is closed as stale by the next invocation
      await vi.advanceTimersByTimeAsync(TIMEOUT_MS + 10_000);

      const b = h.invoke('runner-b');
      await Promise.race([b.result, h.until(() => h.podsOfRun(kase.afterStaleClose.runUuid).length === 1)]);
      const [after, version] = [h.stateOf(), h.stateVersion()];
      expect(after).toMatchObject({
        runUuid: kase.afterStaleClose.runUuid,
        lastUuid: kase.firstRun,
        ok: false,
      });
      expect(h.podsOfRun(kase.afterStaleClose.runUuid)).toHaveLength(kase.afterStaleClose.pods);
      expect(h.podsOfRun(kase.firstRun)).toEqual([]);

      // The closed run's pod reports late: refused, nothing written.
      expect(await h.report(kase.firstRun, { ok: true, errors: [] })).toBe(kase.notCurrentStatus);
      expect(h.stateVersion()).toBe(version);
      // Its runner comes back and finishes its run: superseded, nothing written.
      a.restore();
      expect(await a.result).toMatchObject({ kind: 'superseded', runUuid: kase.firstRun });
      expect(h.stateOf()).toEqual(after);
      expect(h.stateVersion()).toBe(version);
      await stop(b);
    });
  });
});
