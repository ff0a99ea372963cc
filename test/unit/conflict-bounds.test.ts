import { describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import { handleCheckReport } from '../../lib/healthcheck/handle-check-report.ts';
import type { JobKube } from '../../lib/job/job-kube.ts';
import type { KhJob } from '../../lib/job/khjob.ts';
import { advancePhase } from '../../lib/job/phase.ts';
import { runKhJob } from '../../lib/job/run-khjob.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { runIteration } from '../../lib/run/iteration.ts';
import { renewLease } from '../../lib/run/renew-lease.ts';
import { type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';

// How many write conflicts in a row a loop absorbs when nobody configured it: eight, for the runner's claim
// (ITERATION_DEFAULTS), a lease renewal (LEASE_MAX_ATTEMPTS), v3's report endpoint (POST /check), a khjob's
// stale run closed and its phase. The numbers are spelled out here on purpose: a test that reads the
// constant it checks cannot tell when the constant changes.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const DEFAULT_BOUND = 8;

const check: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: NAME, namespace: NS, uid: 'uid-dns' },
  spec: {
    runInterval: '10m',
    timeout: '5m',
    podSpec: { containers: [{ name: 'main', image: 'ghcr.io/kuberhealthy/dns-check:v1.0.0' }] },
  },
};

const RUN: ActiveRun = {
  uuid: '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1767268800',
  runner: 'runner-a',
  holder: 'runner-a/invocation-1',
  leaseUntilMs: T0 + 30_000,
};

function stateWith(run: ActiveRun | undefined): KhState {
  const state = newKhState(NAME, NS);
  if (run) state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(run) };
  return state;
}

/** An API server where another writer lands before every replace of ours, so each one conflicts. */
function contested(initial: KhState) {
  const kube = new FakeKube();
  kube.putCheck(check);
  kube.putState(initial);
  const other = () => {
    const current = kube.state(NS, NAME);
    if (current) kube.putState(current);
  };
  kube.beforeReplace = other;
  return kube;
}

describe('the default conflict bounds', () => {
  it('a runner claiming its run gives up after 8 conflicts (ITERATION_DEFAULTS) with RetriesExhausted of the claim', async () => {
    // Prepare
    const kube = contested(stateWith(undefined));
    const deps: AcquireDeps = {
      kube,
      clock: { nowMs: () => T0 },
      ids: { runUuid: () => RUN.uuid },
      log: silentLog,
    };
    // Act
    const error = await runIteration(deps, {
      namespace: NS,
      checkName: NAME,
      runner: 'runner-a',
      holder: 'runner-a/invocation-1',
      reportingUrl: 'http://khrun-report.kuberhealthy.svc:8080/externalCheckStatus',
      signal: new AbortController().signal,
    }).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ name: 'RetriesExhausted', writer: 'claim', attempts: DEFAULT_BOUND });
    expect(kube.conflicts).toHaveLength(DEFAULT_BOUND);
    expect(kube.createdPods).toEqual([]);
  });

  it('a lease renewal gives up after 8 conflicts (LEASE_MAX_ATTEMPTS), for the lease keeper to retry', async () => {
    // Prepare
    const kube = contested(stateWith(RUN));
    // Act
    const error = await renewLease(
      { kube, clock: { nowMs: () => T0 + 15_000 } },
      { namespace: NS, checkName: NAME, run: RUN },
      { leaseMs: 30_000 },
    ).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ name: 'RetriesExhausted', writer: 'lease', attempts: DEFAULT_BOUND });
    expect(kube.conflicts).toHaveLength(DEFAULT_BOUND);
  });
});

describe('the default conflict bounds of the other kinds', () => {
  /** A khstate store where every replace meets a newer version. */
  const alwaysConflicting = (state: KhState) => {
    let replaces = 0;
    return {
      replaces: () => replaces,
      read: async () => structuredClone(state),
      replace: async (): Promise<KhState> => {
        replaces++;
        throw new WriteConflict('Conflict');
      },
    };
  };

  it("v3's report endpoint (POST /check) answers 500 after 8 conflicting writes", async () => {
    // Prepare: the run is current and before its deadline, so the report is written, and always conflicts.
    const state = stateWith(RUN);
    state.spec.uuid = RUN.uuid;
    const current = alwaysConflicting(state);
    // Act
    const answer = await handleCheckReport(
      {
        findRun: async () => null,
        state: { read: current.read, replace: current.replace },
        clock: { nowMs: () => T0 + 1_000 },
        log: silentLog,
        server: 'khrun-serve',
      },
      {
        caller: {
          via: 'signed',
          run: { namespace: NS, checkName: NAME, uuid: RUN.uuid, deadlineMs: RUN.deadlineMs },
        },
        uuid: RUN.uuid,
        body: '{"ok": true}',
      },
    );
    // Assess
    expect(answer).toEqual({
      status: 500,
      message: `the report could not be stored after ${DEFAULT_BOUND} conflicting writes; retry`,
    });
    expect(current.replaces()).toBe(DEFAULT_BOUND);
  });

  const JOB_UID = '0e5b7c8a-1d2f-4a6b-9c3d-5e7f9a1b3c5d';
  const khjob = (): KhJob => ({
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyJob',
    metadata: { name: NAME, namespace: NS, uid: JOB_UID, resourceVersion: '1' },
    spec: { timeout: '2m', podSpec: { containers: [{ name: 'main', image: 'x' }] } },
  });

  it("a khjob's phase write gives up after 8 conflicts (RetriesExhausted of job-phase)", async () => {
    // Prepare: a khjob that changes under every write.
    let replaces = 0;
    const jobs: JobKube = {
      readJob: async () => khjob(),
      replaceJob: async () => {
        replaces++;
        throw new WriteConflict('Conflict');
      },
    };
    // Act
    const error = await advancePhase({ jobs, log: silentLog }, khjob(), {
      phase: 'Running',
      runner: 'runner-a',
    }).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ name: 'RetriesExhausted', writer: 'job-phase', attempts: DEFAULT_BOUND });
    expect(replaces).toBe(DEFAULT_BOUND);
  });

  it("a khjob's stale run is closed within 8 conflicts (RetriesExhausted of record)", async () => {
    // Prepare: the khjob's own run, left past its deadline by a dead runner, on a contested khstate.
    const stale: ActiveRun = { ...RUN, uuid: JOB_UID, deadlineMs: T0 - 1_000, leaseUntilMs: T0 - 60_000 };
    const kube = contested(stateWith(stale));
    const jobs: JobKube = { readJob: async () => khjob(), replaceJob: async (job) => job };
    const base: AcquireDeps = {
      kube,
      clock: { nowMs: () => T0 },
      ids: { runUuid: () => JOB_UID },
      log: silentLog,
    };
    // Act
    const error = await runKhJob(
      { jobs, base, iterate: async () => ({ kind: 'busy', reason: 'not reached', runUuid: '' }) },
      { namespace: NS, name: NAME, runner: 'runner-a' },
    ).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ name: 'RetriesExhausted', writer: 'record', attempts: DEFAULT_BOUND });
    expect(kube.conflicts).toHaveLength(DEFAULT_BOUND);
  });
});
