import { describe, expect, it } from 'vitest';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { JOB_RUNNER_ANNOTATION } from '../../lib/job/decide.ts';
import type { JobKube } from '../../lib/job/job-kube.ts';
import { jobKubePort, SecondJobRunRefused } from '../../lib/job/job-port.ts';
import { asJobPod } from '../../lib/job/job-writes.ts';
import { jobAsCheck, type KhJob } from '../../lib/job/khjob.ts';
import { runKhJob } from '../../lib/job/run-khjob.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { StateWriteIntent } from '../../lib/kube/port.ts';
import { acquireRun } from '../../lib/run/acquire.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { finishRun } from '../../lib/run/finish.ts';
import type { IterationResult } from '../../lib/run/iteration.ts';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readActiveRun,
  readLastOutcome,
} from '../../lib/state/khstate.ts';
import type { RunOutcome } from '../../lib/state/outcome.ts';
import { OutcomeKind } from '../../lib/state/outcome-kind.ts';
import { claimRun } from '../../lib/state/record.ts';
import { isJobState } from '../../lib/state/workload.ts';
import { FakeKube } from './fakes/fake-kube.ts';

const NS = 'jobs';
const NAME = 'once';
const UID = '0e5b7c8a-1d2f-4a6b-9c3d-5e7f9a1b3c5d';
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

/** khjobs in memory with real preconditions: a stale resourceVersion is a WriteConflict. */
class FakeJobs implements JobKube {
  job: KhJob | null;
  writes: KhJob[] = [];
  private rv = 1;
  constructor(job: KhJob) {
    this.job = { ...job, metadata: { ...job.metadata, resourceVersion: '1' } };
  }
  async readJob() {
    return this.job && structuredClone(this.job);
  }
  async replaceJob(job: KhJob) {
    if (!this.job || job.metadata.resourceVersion !== this.job.metadata.resourceVersion)
      throw new WriteConflict('Conflict');
    this.job = { ...structuredClone(job), metadata: { ...job.metadata, resourceVersion: String(++this.rv) } };
    this.writes.push(structuredClone(this.job));
    return structuredClone(this.job);
  }
}

function khjob(phase?: string, annotations?: Record<string, string>): KhJob {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyJob',
    metadata: { name: NAME, namespace: NS, uid: UID, ...(annotations ? { annotations } : {}) },
    spec: {
      timeout: '2m',
      podSpec: { containers: [{ name: 'main', image: 'x' }] },
      ...(phase ? { phase } : {}),
    },
  };
}

function harness(job: KhJob, nowMs = T0) {
  const kube = new FakeKube();
  const jobs = new FakeJobs(job);
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const base: AcquireDeps = {
    kube,
    clock: { nowMs: () => nowMs },
    ids: { runUuid: () => 'random-uuid-not-the-jobs' },
    log: log as never,
  };
  const iterations: string[] = [];
  /** One iteration of the engine's own claim and record, through the ports the driver adapted. */
  const iterate =
    (outcome: RunOutcome, before?: () => Promise<void>) =>
    async (adapt: (d: AcquireDeps) => AcquireDeps): Promise<IterationResult> => {
      await before?.();
      const d = adapt(base);
      const source = await d.kube.readCheck(NS, NAME);
      const v = validateCheck(source!);
      if (!v.ok) throw new Error(v.reason);
      const acquired = await acquireRun(d, v.check, {
        runner: 'r',
        holder: 'r/1',
        leaseMs: 30_000,
        maxAttempts: 4,
      });
      if (acquired.kind === 'busy') return { kind: 'busy', reason: 'live', runUuid: acquired.run.uuid };
      if (acquired.kind === 'refused') throw new Error(acquired.reason);
      iterations.push(acquired.run.uuid);
      const recorded = await finishRun(d, v.check, acquired.run, outcome, { runner: 'r', maxAttempts: 4 });
      return { kind: 'recorded', runUuid: acquired.run.uuid, outcome: recorded ?? outcome, adopted: false };
    };
  const run = (it: ReturnType<typeof iterate>) =>
    runKhJob({ jobs, base, iterate: it }, { namespace: NS, name: NAME, runner: 'runner-a' });
  return { kube, jobs, base, iterations, iterate, run };
}

const OK: RunOutcome = { kind: OutcomeKind.Succeeded, ok: true, errors: [], node: 'n1', durationMs: 1200 };
const FAILED: RunOutcome = {
  kind: OutcomeKind.ExecutionError,
  ok: false,
  errors: [`Check execution error: ${NS}/${NAME}: pod could not start`],
  node: '',
  durationMs: 10,
};

describe('runKhJob: a khjob runs once, through the run engine', () => {
  it('a new khjob: Running, one run named by its uid, recorded, Completed', async () => {
    const h = harness(khjob());
    const result = await h.run(h.iterate(OK));
    expect(result).toMatchObject({ kind: 'recorded', runUuid: UID });
    expect(h.iterations).toEqual([UID]);
    expect(h.jobs.writes.map((j) => j.spec.phase)).toEqual(['Running', 'Completed']);
    expect(h.jobs.writes[0]?.metadata.annotations?.[JOB_RUNNER_ANNOTATION]).toBe('runner-a');
    const state = h.kube.state(NS, NAME)!;
    expect(isJobState(state)).toBe(true);
    expect(readLastOutcome(state)?.uuid).toBe(UID);
    expect(state.spec).toMatchObject({ OK: true, Errors: [], uuid: UID });
  });

  it("words a failed run's errors as v2 does for khjobs", async () => {
    const h = harness(khjob());
    const result = await h.run(h.iterate(FAILED));
    const expected = [`Job execution error: ${NS}/${NAME}: pod could not start`];
    expect(h.kube.state(NS, NAME)?.spec.Errors).toEqual(expected);
    expect(result.kind === 'recorded' && result.outcome.errors).toEqual(expected);
    expect(h.jobs.job?.spec.phase).toBe('Completed');
  });

  it('a second invocation finds it ran: no second run', async () => {
    const h = harness(khjob());
    await h.run(h.iterate(OK));
    const again = await h.run(h.iterate(OK));
    expect(again.kind).toBe('already-ran');
    expect(h.iterations).toEqual([UID]);
  });

  it('a run recorded by another invocation between the decision and the claim: the claim is refused', async () => {
    const h = harness(khjob());
    // The other invocation runs the khjob to the end while this one has decided "run" and not yet claimed.
    const other = () => h.run(h.iterate(OK)).then(() => undefined);
    const result = await h.run(h.iterate(OK, other));
    expect(result.kind).toBe('already-ran');
    expect(h.iterations).toEqual([UID]);
    expect(h.kube.stateHistory.filter((s) => readActiveRun(s)?.uuid === UID)).toHaveLength(1);
  });

  it('a run left past its deadline by a killed runner is closed, not started again', async () => {
    const h = harness(khjob('Running', { [JOB_RUNNER_ANNOTATION]: 'runner-dead' }));
    const run: ActiveRun = {
      uuid: UID,
      startedAtMs: T0 - 200_000,
      deadlineMs: T0 - 80_000,
      pod: 'once-1',
      runner: 'runner-dead',
      holder: 'runner-dead/1',
      leaseUntilMs: T0 - 170_000,
    };
    h.kube.putState({
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyState',
      metadata: { name: NAME, namespace: NS, annotations: { [ANNOTATION.run]: JSON.stringify(run) } },
      spec: {
        OK: true,
        Errors: [],
        RunDuration: '0s',
        Namespace: NS,
        Node: '',
        AuthoritativePod: '',
        uuid: UID,
      },
    });
    const result = await h.run(h.iterate(OK));
    expect(result).toMatchObject({ kind: 'recorded', outcome: { kind: 'TimedOut' } });
    expect(h.iterations).toEqual([]);
    const state = h.kube.state(NS, NAME)!;
    expect(readActiveRun(state)).toBeUndefined();
    expect(state.spec.Errors[0]).toMatch(/^Job execution error: jobs\/once: timed out/);
    expect(h.jobs.job?.spec.phase).toBe('Completed');
  });

  it('marks the khjob Running only once its run is held: a run found busy leaves the phase as it was', async () => {
    const h = harness(khjob());
    const other: ActiveRun = {
      uuid: 'a-khcheck-of-the-same-name',
      startedAtMs: T0 - 1_000,
      deadlineMs: T0 + 60_000,
      pod: 'once-0',
      runner: 'runner-b',
      holder: 'runner-b/1',
      leaseUntilMs: T0 + 30_000,
    };
    h.kube.putState({
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyState',
      metadata: { name: NAME, namespace: NS, annotations: { [ANNOTATION.run]: JSON.stringify(other) } },
      spec: {
        OK: true,
        Errors: [],
        RunDuration: '0s',
        Namespace: NS,
        Node: '',
        AuthoritativePod: '',
        uuid: other.uuid,
      },
    });
    const result = await h.run(h.iterate(OK));
    expect(result.kind).toBe('busy');
    expect(h.jobs.writes).toEqual([]);
  });

  it('leaves a khjob Kuberhealthy v2 is running alone', async () => {
    const h = harness(khjob('Running'));
    const result = await h.run(h.iterate(OK));
    expect(result.kind).toBe('busy');
    expect(h.iterations).toEqual([]);
    expect(h.jobs.writes).toEqual([]);
  });
});

describe("the khjob's port", () => {
  it('refuses a claim that would start a recorded run again, before anything is written', async () => {
    const h = harness(khjob());
    await h.run(h.iterate(OK));
    const port = jobKubePort(h.kube, khjob(), () => h.jobs.readJob());
    const check = validateCheck(jobAsCheck({ ...khjob(), metadata: { ...khjob().metadata } }));
    if (!check.ok) throw new Error(check.reason);
    const writes = h.kube.stateHistory.length;
    await expect(
      acquireRun({ ...h.base, kube: port, ids: { runUuid: () => UID } }, check.check, {
        runner: 'r',
        holder: 'r/2',
        leaseMs: 30_000,
        maxAttempts: 4,
      }),
    ).rejects.toBeInstanceOf(SecondJobRunRefused);
    expect(h.kube.stateHistory.length).toBe(writes);
  });

  it.each<[string, string, StateWriteIntent | undefined, string, number]>([
    ["a claim of the khjob's run", 'claim', 'claim', UID, 1],
    ["a write labelled 'claim' that does not declare the intent", 'claim', undefined, UID, 0],
    ["an update of the khjob's run", 'lease', 'update', UID, 0],
    ['a claim of another run', 'claim', 'claim', 'another-run', 0],
  ])('moves the khjob on only after a claim of its run: %s', async (_, writer, intent, runUuid, claims) => {
    const kube = new FakeKube();
    let afterClaim = 0;
    const port = jobKubePort(
      kube,
      khjob(),
      async () => khjob(),
      async () => {
        afterClaim++;
      },
    );
    const run: ActiveRun = {
      uuid: runUuid,
      startedAtMs: T0,
      deadlineMs: T0 + 120_000,
      pod: `${NAME}-1`,
      runner: 'r',
      holder: 'r/1',
      leaseUntilMs: T0 + 30_000,
    };
    const created = await port.createState(claimRun(newKhState(NAME, NS), run), writer, intent);
    await port.replaceState(created, writer, intent);
    expect(afterClaim).toBe(2 * claims);
  });

  it("makes the checker pod the khjob's: owner KuberhealthyJob, workload label", () => {
    const pod = asJobPod(
      {
        metadata: {
          name: 'once-1',
          labels: { app: 'kuberhealthy-check' },
          ownerReferences: [
            { apiVersion: 'comcast.github.io/v1', kind: 'KuberhealthyCheck', name: NAME, uid: UID },
          ],
        },
      },
      khjob(),
    );
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'KuberhealthyJob', uid: UID });
    expect(pod.metadata?.labels).toEqual({ app: 'kuberhealthy-check', 'khrun.dev/workload': 'KHJob' });
  });
});
