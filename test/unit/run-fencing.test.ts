import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KH_ENV, podNameFor } from '../../lib/check/pod-builder.ts';
import { startReportServer } from '../../lib/report/http-server.ts';
import { randomReportKey, signedReportUrl } from '../../lib/report/report-token.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { adoptedPodOf, decideAdoptedPod, isRunnerEndpoint } from '../../lib/run/adopted-pod.ts';
import { endpointProbeFor, httpEndpointProbe } from '../../lib/run/endpoint-probe.ts';
import { handOverDone } from '../../lib/run/hand-over.ts';
import { type IterationConfig, runIteration } from '../../lib/run/iteration.ts';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readActiveRun,
  readLastOutcome,
} from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { holdingOf } from '../../lib/state/run-holder.ts';
import { FakeKube } from './fakes/fake-kube.ts';

// Fencing (issue 11 point 1): every write on a run's behalf is conditioned on the run still being held by
// this invocation; adoption keeps what can still report (point 3); an invalid khcheck's orphaned run is
// closed (point 9). The driver runs over the in-memory API server; time is faked.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2024, 2, 5, 10, 20, 30, 0);
const URL = 'http://127.0.0.1:9/report';
/** The khcheck's uid, which its checker pods' owner reference names. */
const CHECK_UID = 'uid-dns';
const ME = 'runner-a/invocation-1';
const RUN: ActiveRun = {
  uuid: '11111111-1111-4111-8111-111111111111',
  startedAtMs: T0 - 10_000,
  deadlineMs: T0 + 290_000,
  pod: podNameFor(NAME, T0 - 10_000),
  runner: 'runner-b',
  holder: 'runner-b/invocation-3',
  leaseUntilMs: T0 + 20_000,
};

function khcheck(spec: Partial<KhCheck['spec']> = {}): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: NAME, namespace: NS, uid: CHECK_UID },
    spec: {
      runInterval: '10m',
      timeout: '5m',
      podSpec: { containers: [{ name: 'main', image: 'checker:v1' }] },
      ...spec,
    },
  };
}

function stateWith(run: ActiveRun | null, extra: Record<string, string> = {}): KhState {
  const state = newKhState(NAME, NS);
  state.spec = { ...state.spec, uuid: run?.uuid ?? '' };
  state.metadata.annotations = { ...(run ? { [ANNOTATION.run]: JSON.stringify(run) } : {}), ...extra };
  return state;
}

function podOf(run: ActiveRun, over: Partial<V1Pod['metadata']> = {}): V1Pod {
  return {
    metadata: {
      name: run.pod,
      namespace: NS,
      uid: `uid-${run.pod}`,
      labels: { 'kuberhealthy-run-id': run.uuid, 'kuberhealthy-check-name': NAME },
      ownerReferences: [
        { apiVersion: 'comcast.github.io/v1', kind: 'KuberhealthyCheck', name: NAME, uid: CHECK_UID },
      ],
      creationTimestamp: new Date(run.startedAtMs),
      ...over,
    },
    spec: {
      containers: [{ name: 'main', image: 'checker:v1', env: [{ name: KH_ENV.reportingUrl, value: URL }] }],
    },
    status: { phase: 'Running' },
  };
}

function harness(check: KhCheck = khcheck()) {
  const kube = new FakeKube();
  kube.putCheck(check);
  const controller = new AbortController();
  const deps: AcquireDeps = {
    kube,
    clock: { nowMs: () => Date.now() },
    ids: { runUuid: () => '22222222-2222-4222-8222-222222222222' },
    log: { info() {}, warn() {}, error() {}, debug() {} },
  };
  const cfg = (over: Partial<IterationConfig> = {}): IterationConfig => ({
    namespace: NS,
    checkName: NAME,
    runner: 'runner-a',
    holder: ME,
    reportingUrl: 'http://khrun-report:8080/externalCheckStatus',
    signal: controller.signal,
    ...over,
  });
  return { kube, deps, controller, cfg };
}

/** A report accepted for the run, as an endpoint (anyone's) writes it. */
const reportOf = (run: ActiveRun) =>
  JSON.stringify({ uuid: run.uuid, atMs: Date.now(), ok: true, errors: [], pod: run.pod });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('holdingOf: whose the run is', () => {
  it.each([
    { name: 'held by us', stored: { ...RUN, holder: ME }, kind: 'held' },
    { name: 'adopted by another invocation', stored: RUN, kind: 'taken' },
    {
      name: 'adopted by another invocation with our runner name',
      stored: { ...RUN, runner: 'runner-a' },
      kind: 'taken',
    },
    { name: 'another run', stored: { ...RUN, uuid: 'x', holder: ME }, kind: 'closed' },
    { name: 'no run', stored: null, kind: 'closed' },
  ])('$name: $kind', ({ stored, kind }) => {
    expect(holdingOf(stateWith(stored), { ...RUN, runner: 'runner-a', holder: ME }).kind).toBe(kind);
  });

  it('falls back to the runner name for a run claimed by an older khrun (no holder)', () => {
    const { holder: _, ...old } = RUN;
    expect(holdingOf(stateWith(old), old).kind).toBe('held');
    expect(holdingOf(stateWith(old), { ...old, runner: 'runner-a' }).kind).toBe('taken');
  });
});

describe('runIteration: a runner that lost its run steps down', () => {
  const mine = { ...RUN, runner: 'runner-a', holder: ME, leaseUntilMs: T0 - 1 };

  it('stops waiting, records nothing and removes no pod when another invocation adopts the run', async () => {
    const h = harness();
    h.kube.putState(stateWith({ ...RUN, leaseUntilMs: T0 - 1 }));
    h.kube.putPod(podOf(RUN));
    const running = runIteration(h.deps, h.cfg());
    await h.kube.until(() => h.kube.watching === 1);
    const writes = h.kube.stateHistory.length;
    const adopter = {
      ...RUN,
      runner: 'runner-c',
      holder: 'runner-c/invocation-9',
      leaseUntilMs: T0 + 30_000,
    };
    h.kube.putState(stateWith(adopter));
    expect(await running).toEqual({
      kind: 'superseded',
      runUuid: RUN.uuid,
      reason: "the run was taken over by runner runner-c after this runner's lease lapsed",
    });
    expect(h.kube.stateHistory).toHaveLength(writes + 1);
    expect(readActiveRun(h.kube.state(NS, NAME) ?? null)).toEqual(adopter);
    expect(h.kube.removedPods).toEqual([]);
  });

  it('writes no outcome and removes no pod when the run is taken between the decision and the record write', async () => {
    const h = harness();
    h.kube.putState(stateWith(mine, { [ANNOTATION.report]: reportOf(mine) }));
    const exited = { name: 'main', image: '', imageID: '', ready: false, restartCount: 0 };
    h.kube.putPod({
      ...podOf(mine),
      status: {
        phase: 'Succeeded',
        containerStatuses: [{ ...exited, state: { terminated: { exitCode: 0 } } }],
      },
    });
    // The run is decided at once (it reported); the record write then meets an adopter's newer version.
    h.kube.beforeReplace = (incoming) => {
      if (!readLastOutcome(incoming)) return;
      h.kube.beforeReplace = undefined;
      h.kube.putState(
        stateWith({ ...RUN, leaseUntilMs: T0 + 30_000 }, { [ANNOTATION.report]: reportOf(mine) }),
      );
    };
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toMatchObject({ kind: 'superseded', runUuid: RUN.uuid });
    expect(readLastOutcome(h.kube.state(NS, NAME) ?? null)).toBeUndefined();
    expect(h.kube.removedPods).toEqual([]);
  });

  it('keeps its own report endpoint up until the run’s report landed, when it hosts it', async () => {
    const h = harness();
    h.kube.putState(stateWith({ ...RUN, leaseUntilMs: T0 - 1 }));
    h.kube.putPod(podOf(RUN));
    const phases: string[] = [];
    const running = runIteration(h.deps, h.cfg({ hostsReports: true, onPhase: (p) => phases.push(p) }));
    let settled = false;
    void running.then(() => {
      settled = true;
    });
    await h.kube.until(() => h.kube.watching === 1);
    const adopter = {
      ...RUN,
      runner: 'runner-c',
      holder: 'runner-c/invocation-9',
      leaseUntilMs: T0 + 30_000,
    };
    h.kube.putState(stateWith(adopter));
    await h.kube.until(() => phases.includes('handing over'));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(settled).toBe(false);
    // The kept pod reports through this runner's endpoint: now the endpoint is no longer needed.
    h.kube.putState(stateWith(adopter, { [ANNOTATION.report]: reportOf(RUN) }));
    expect(await running).toMatchObject({ kind: 'superseded' });
    expect(h.kube.removedPods).toEqual([]);
  });
});

describe('handOverDone', () => {
  const taken = stateWith(RUN);
  it.each([
    { name: 'the run goes on without its report', state: taken, nowMs: T0, done: false },
    { name: 'a watch that holds no khstate', state: null, nowMs: T0, done: false },
    {
      name: 'its report landed',
      state: stateWith(RUN, { [ANNOTATION.report]: reportOf(RUN) }),
      nowMs: T0,
      done: true,
    },
    { name: 'the run was closed', state: stateWith(null), nowMs: T0, done: true },
    { name: 'its deadline passed', state: taken, nowMs: RUN.deadlineMs, done: true },
  ])('$name: $done', ({ state, nowMs, done }) => {
    expect(handOverDone(state, RUN, nowMs)).toBe(done);
  });
});

describe('decideAdoptedPod: keep what can still report', () => {
  const pod = podOf(RUN);
  it.each([
    { reported: true, endpoint: 'dead', kind: 'keep' },
    { reported: false, endpoint: 'alive', kind: 'keep' },
    { reported: false, endpoint: 'unknown', kind: 'keep' },
    { reported: false, endpoint: 'dead', kind: 'replace' },
  ] as const)('reported $reported, endpoint $endpoint: $kind', ({ reported, endpoint, kind }) => {
    expect(decideAdoptedPod({ pod, reported, endpoint }).kind).toBe(kind);
  });

  it('creates a pod when the run has none, or only one being deleted', () => {
    expect(decideAdoptedPod({ pod: undefined, reported: false, endpoint: 'dead' }).kind).toBe('create');
    const deleting = podOf(RUN, { deletionTimestamp: new Date(T0) });
    expect(adoptedPodOf([deleting], RUN.uuid, CHECK_UID)).toBeUndefined();
    const fresh = podOf(RUN, { name: `${RUN.pod}-x`, uid: 'new', creationTimestamp: new Date(T0) });
    expect(adoptedPodOf([deleting, podOf(RUN), fresh], RUN.uuid, CHECK_UID)?.metadata?.uid).toBe('new');
  });

  it("adopts only a pod owned by the check's object (uid), never one that only carries the run's label", () => {
    const forged = podOf(RUN, {
      name: `${RUN.pod}-forged`,
      uid: 'forged',
      creationTimestamp: new Date(T0 + 1_000),
      ownerReferences: [
        { apiVersion: 'comcast.github.io/v1', kind: 'KuberhealthyCheck', name: NAME, uid: 'other' },
      ],
    });
    const unowned = podOf(RUN, { name: `${RUN.pod}-unowned`, uid: 'unowned', ownerReferences: undefined });
    expect(adoptedPodOf([forged, unowned], RUN.uuid, CHECK_UID)).toBeUndefined();
    expect(adoptedPodOf([forged, podOf(RUN)], RUN.uuid, CHECK_UID)?.metadata?.uid).toBe(`uid-${RUN.pod}`);
  });
});

describe('isRunnerEndpoint', () => {
  const OWN = 'http://10.1.0.5:8080/externalCheckStatus/ns/check/uuid/1/mac';
  it.each([
    [
      'another runner of the same shape',
      'http://10.1.0.9:8080/externalCheckStatus/ns/check/uuid/1/mac',
      true,
    ],
    ["v2's bare path at a pod IP", 'http://10.1.0.9:8080/externalCheckStatus', true],
    ['an IPv6 pod address', 'http://[fd00::9]:8080/externalCheckStatus', true],
    [
      'a host name (a Service, the metadata server)',
      'http://metadata.google.internal:8080/externalCheckStatus',
      false,
    ],
    ['another port', 'http://10.1.0.9:10250/externalCheckStatus', false],
    ['another path', 'http://10.1.0.9:8080/api/v1/secrets', false],
    ['another scheme', 'https://10.1.0.9:8080/externalCheckStatus', false],
    ['credentials in the URL', 'http://a:b@10.1.0.9:8080/externalCheckStatus', false],
    ['no URL at all', 'not a url', false],
  ])('%s: %s', (_, url, expected) => {
    expect(isRunnerEndpoint(url, OWN)).toBe(expected);
  });
  it.each([
    ['another port', 'http://10.1.0.9:40123/externalCheckStatus/ns/check/uuid/1/mac', true],
    ['a host name', 'http://metadata.google.internal:80/externalCheckStatus', false],
    ['another path', 'http://10.1.0.9:40123/api/v1/secrets', false],
  ])('runners on free ports (anyPort), %s: %s', (_, url, expected) => {
    expect(isRunnerEndpoint(url, OWN, { anyPort: true })).toBe(expected);
  });
});

describe('endpointProbeFor', () => {
  it('accepts any port only for a runner hosting its reports on a free port', () => {
    expect(endpointProbeFor({ kind: 'hosted', port: 0 }).anyPort).toBe(true);
    expect(endpointProbeFor({ kind: 'hosted', port: 8080 }).anyPort).toBe(false);
    expect(endpointProbeFor({ kind: 'external' }).anyPort).toBe(false);
  });
});

describe('httpEndpointProbe', () => {
  it('says alive when the endpoint answers, dead when nothing listens there', async () => {
    vi.useRealTimers();
    const server = createServer((_req, res) => res.writeHead(405).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/r/ns/check/uuid/mac`;
    const signal = new AbortController().signal;
    expect(await httpEndpointProbe.probe(url, signal)).toBe('alive');
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await httpEndpointProbe.probe(url, signal)).toBe('dead');
    expect(await httpEndpointProbe.probe('not a url', signal)).toBe('unknown');
  });

  it("says dead when another runner's report server holds the address now (it would refuse the URL)", async () => {
    vi.useRealTimers();
    const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() };
    const fail = () => Promise.reject(new Error('no API request expected'));
    const other = await startReportServer(
      {
        lookup: { podsByRunId: fail, livePodsByIp: fail },
        state: { read: fail, replace: fail },
        clock: { nowMs: () => Date.now() },
        log,
        server: 'another runner',
      },
      { host: '127.0.0.1', port: 0, access: { key: randomReportKey(), unsigned: 'refuse', scope: 'all' } },
    );
    try {
      const run = { namespace: NS, checkName: NAME, uuid: RUN.uuid, deadlineMs: Date.now() + 60_000 };
      const signal = new AbortController().signal;
      // The dead runner's URL (its key) at the address the other runner listens at now.
      expect(await httpEndpointProbe.probe(signedReportUrl(other.url, randomReportKey(), run), signal)).toBe(
        'dead',
      );
      expect(await httpEndpointProbe.probe(other.url, signal)).toBe('alive');
    } finally {
      await other.close();
    }
  });
});

describe('runIteration: an invalid khcheck', () => {
  const bad = khcheck({ timeout: '5 min' });

  it('closes a run whose runner died (lease lapsed) with the validation error, and removes its pod', async () => {
    const h = harness(bad);
    h.kube.putState(stateWith({ ...RUN, leaseUntilMs: T0 - 1 }));
    h.kube.putPod(podOf(RUN));
    const result = await runIteration(h.deps, h.cfg());
    expect(result).toMatchObject({ kind: 'recorded', outcome: { kind: 'ExecutionError' } });
    const state = h.kube.state(NS, NAME) ?? null;
    expect(readActiveRun(state)).toBeUndefined();
    expect(readLastOutcome(state)).toMatchObject({
      uuid: RUN.uuid,
      kind: 'ExecutionError',
      durationMs: 10_000,
    });
    expect(state?.spec.uuid).toBe(RUN.uuid);
    expect(state?.spec.Errors[0]).toMatch(/spec\.timeout "5 min" is not a Go duration/);
    expect(h.kube.removedPods).toEqual([RUN.pod]);
  });

  it('leaves a run whose runner is alive to that runner, recording the error beside it', async () => {
    const h = harness(bad);
    h.kube.putState(stateWith(RUN));
    h.kube.putPod(podOf(RUN));
    await runIteration(h.deps, h.cfg());
    const state = h.kube.state(NS, NAME) ?? null;
    expect(readActiveRun(state)).toEqual(RUN);
    expect(state?.spec.OK).toBe(false);
    expect(h.kube.removedPods).toEqual([]);
  });
});
