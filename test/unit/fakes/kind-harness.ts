import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { RUN_ID_LABEL } from '../../../lib/check/pod-builder.ts';
import type { Log } from '../../../lib/core/log.ts';
import { handleCheckReport } from '../../../lib/healthcheck/handle-check-report.ts';
import { healthCheckPort } from '../../../lib/healthcheck/healthcheck-port.ts';
import { HC_POD, type HealthCheck } from '../../../lib/healthcheck/resources.ts';
import type { JobKube } from '../../../lib/job/job-kube.ts';
import type { KhJob } from '../../../lib/job/khjob.ts';
import type { JobRunResult } from '../../../lib/job/run-khjob.ts';
import type { KhJobPorts } from '../../../lib/kinds/khjob.ts';
import type { SessionKit } from '../../../lib/kinds/kind.ts';
import { KINDS } from '../../../lib/kinds/registry.ts';
import { WriteConflict } from '../../../lib/kube/errors.ts';
import type { KubePort } from '../../../lib/kube/port.ts';
import { handleReport } from '../../../lib/report/handle-report.ts';
import type { CallerLookup } from '../../../lib/report/identify-caller.ts';
import type { AcquireDeps } from '../../../lib/run/acquire-deps.ts';
import { type IterationConfig, runIteration } from '../../../lib/run/iteration.ts';
import { readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../../lib/state/resources.ts';
import { FakeHealthCheckApi } from './fake-healthcheck-api.ts';
import { FakeKube } from './fake-kube.ts';

/**
 * One harness per kind of object khrun runs (khcheck, khjob, HealthCheck), each over its in-memory API
 * server, all behind the same interface: start an invocation, play the checker pod (phase, report), and read
 * the object's state as the kind stores it (a khstate, or the HealthCheck's status), so a contract test
 * asserts once for all three. Time is Vitest's fake timers (Date included): the engine's clock is Date.now.
 */

import type { KindName } from '../../../lib/core/run-target.ts';

export type { KindName };

export const NS = 'checks';
export const NAME = 'web';
/** The run UUIDs the engine draws for a khcheck or a HealthCheck, in order. */
export const RUN_UUIDS = [
  '11111111-1111-4111-8111-111111111111',
  '22222222-2222-4222-8222-222222222222',
  '33333333-3333-4333-8333-333333333333',
] as const;
/** The khjob's uid, which names its one run (jobRunUuid). */
export const JOB_UID = '0e5b7c8a-1d2f-4a6b-9c3d-5e7f9a1b3c5d';
/** Every kind's timeout and the lease of every invocation: the lease lapses well before the deadline. */
export const TIMEOUT_MS = 60_000;
export const LEASE_MS = 10_000;
const URL = 'http://10.0.0.1:8080/externalCheckStatus';

/** What every kind's state says about its run, read from where the kind keeps it. */
export interface StateView {
  /** The run in progress ('' when idle): the khstate's spec.uuid while a run is held; v3's status.currentUUID. */
  runUuid: string;
  /** The invocation holding the run (khrun's lease), '' when none. */
  holder: string;
  /** The run whose outcome was last recorded ('' when none). */
  lastUuid: string;
  ok: boolean;
  errors: string[];
  /** When the last result was recorded (epoch ms, whole seconds; 0 = never). */
  lastRunMs: number;
}

/** One invocation of the runner. Its API connection can be cut (calls hang, watch events are lost) and restored. */
export interface Invocation {
  result: Promise<JobRunResult>;
  controller: AbortController;
  /** Cuts the invocation off from the API server, as a killed (or partitioned) runner is. */
  cut(): void;
  /** Lets the calls it made while cut off go through. */
  restore(): void;
}

export interface KindHarness {
  kind: KindName;
  /** Starts an invocation as runner `runner`; its holder is `runner/<n>`, n counting invocations from 1. */
  invoke(runner: string): Invocation;
  stateOf(): StateView;
  /** The resourceVersion of the object the state is stored in: unchanged means nothing was written. */
  stateVersion(): string;
  /** Every pod the kind's API server created, in order. */
  createdPods(): V1Pod[];
  /** The pods now in the API server that carry the run's label (the kind's own: runLabel). */
  podsOfRun(uuid: string): V1Pod[];
  /** What the kubelet does: a new status for a pod. */
  setPodStatus(name: string, status: V1PodStatus): void;
  /** A checker pod's report of run uuid, through the kind's report endpoint: its HTTP status. */
  report(uuid: string, result: { ok: boolean; errors: string[] }): Promise<number>;
  /** Resolves once test() holds; checked after every change the API server sees. */
  until(test: () => boolean): Promise<void>;
}

export const silentLog: Log = { info() {}, warn() {}, error() {}, debug() {} };

export function kindHarness(kind: KindName): KindHarness {
  if (kind === 'healthcheck') return healthCheckHarness();
  return khstateHarness(kind);
}

// --- the connection an invocation talks through -------------------------------------------------------

/** A connection to the API server that can be cut: calls made while cut wait until it is restored. */
class Link {
  private gate: { promise: Promise<void>; open: () => void } | undefined;

  get up(): boolean {
    return this.gate === undefined;
  }

  cut(): void {
    if (this.gate) return;
    let open = () => {};
    const promise = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gate = { promise, open };
  }

  restore(): void {
    this.gate?.open();
    this.gate = undefined;
  }

  async pass(): Promise<void> {
    while (this.gate) await this.gate.promise;
  }

  /** fn, called once the link is up. */
  through<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return async (...args) => {
      await this.pass();
      return fn(...args);
    };
  }
}

/** port as an invocation behind link sees it; watch events that arrive while the link is cut are lost. */
function linkedPort(port: KubePort, link: Link): KubePort {
  return {
    readCheck: link.through((ns, name) => port.readCheck(ns, name)),
    readState: link.through((ns, name) => port.readState(ns, name)),
    createState: link.through((s, writer, intent) => port.createState(s, writer, intent)),
    replaceState: link.through((s, writer, intent) => port.replaceState(s, writer, intent)),
    deleteState: link.through((ns, name, rv) => port.deleteState(ns, name, rv)),
    listCheckPods: link.through((ns, name) => port.listCheckPods(ns, name)),
    listCheckPodsAt: link.through((ns, name) => port.listCheckPodsAt(ns, name)),
    createPod: link.through((pod) => port.createPod(pod)),
    removePod: link.through((ns, name, uid) => port.removePod(ns, name, uid)),
    watchRun: link.through((opts) =>
      port.watchRun({
        ...opts,
        onChange: (view) => {
          if (link.up) opts.onChange(view);
        },
      }),
    ),
  };
}

function invocationConfig(runner: string, n: number, signal: AbortSignal): IterationConfig {
  return {
    namespace: NS,
    checkName: NAME,
    runner,
    holder: `${runner}/${n}`,
    reportingUrl: URL,
    leaseMs: LEASE_MS,
    signal,
  };
}

const clock = { nowMs: () => Date.now() };
const noEvents = { outcomeRecorded: async () => {} };
const REPORT_DEADLINE_MS = Number.MAX_SAFE_INTEGER;
const signedCaller = (uuid: string) =>
  ({
    via: 'signed',
    run: { namespace: NS, checkName: NAME, uuid, deadlineMs: REPORT_DEADLINE_MS },
  }) as const;
/** A signed URL names its run: the endpoint never looks a caller up. */
const noLookup: CallerLookup = {
  podsByRunId: () => Promise.reject(new Error('a signed report needs no lookup')),
  livePodsByIp: () => Promise.reject(new Error('a signed report needs no lookup')),
};

// --- khcheck and khjob: a khstate in the khcheck API server -------------------------------------------

/** khjobs in memory with real preconditions: a stale resourceVersion is a WriteConflict. */
export class FakeJobs implements JobKube {
  private job: KhJob | null;
  private rv = 1;
  constructor(job: KhJob) {
    this.job = { ...structuredClone(job), metadata: { ...job.metadata, resourceVersion: '1' } };
  }
  get current(): KhJob | null {
    return this.job && structuredClone(this.job);
  }
  async readJob(): Promise<KhJob | null> {
    await Promise.resolve();
    return this.current;
  }
  async replaceJob(job: KhJob): Promise<KhJob> {
    await Promise.resolve();
    if (!this.job || job.metadata.resourceVersion !== this.job.metadata.resourceVersion)
      throw new WriteConflict('Conflict');
    this.job = { ...structuredClone(job), metadata: { ...job.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.job);
  }
}

const podSpec = { containers: [{ name: 'main', image: 'ghcr.io/example/web-check:v1' }] };
const timeout = `${TIMEOUT_MS / 1000}s`;

function khcheck(): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: NAME, namespace: NS, uid: 'uid-web' },
    spec: { runInterval: '10m', timeout, podSpec },
  };
}

function khjob(): KhJob {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyJob',
    metadata: { name: NAME, namespace: NS, uid: JOB_UID },
    spec: { timeout, podSpec },
  };
}

function khstateView(state: KhState | null): StateView {
  const run = readActiveRun(state);
  const lastRun = state?.spec.LastRun ? Date.parse(state.spec.LastRun) : 0;
  return {
    runUuid: run ? (state?.spec.uuid ?? '') : '',
    holder: run?.holder ?? '',
    lastUuid: readLastOutcome(state)?.uuid ?? '',
    ok: state?.spec.OK ?? false,
    errors: state?.spec.Errors ?? [],
    lastRunMs: Number.isFinite(lastRun) ? lastRun : 0,
  };
}

function khstateHarness(kind: 'khcheck' | 'khjob'): KindHarness {
  const kube = new FakeKube();
  const jobs = new FakeJobs(khjob());
  if (kind === 'khcheck') kube.putCheck(khcheck());
  const ids: string[] = [...RUN_UUIDS];
  let invocations = 0;
  const invoke = (runner: string): Invocation => {
    const link = new Link();
    const controller = new AbortController();
    const cfg = invocationConfig(runner, ++invocations, controller.signal);
    const base: AcquireDeps = {
      kube: linkedPort(kube, link),
      clock,
      ids: {
        runUuid: () => {
          const next = ids.shift();
          if (!next) throw new Error('out of run UUIDs');
          return next;
        },
      },
      log: silentLog,
    };
    // The kind's own adapter (lib/kinds), run in a session kit over this invocation's ports.
    const kit: SessionKit<KhJobPorts> = {
      runner,
      ports: {
        kube: base.kube,
        events: noEvents,
        jobs: {
          readJob: link.through(jobs.readJob.bind(jobs)),
          replaceJob: link.through(jobs.replaceJob.bind(jobs)),
        },
      },
      deps: () => base,
      iterate: (deps) => runIteration(deps, cfg),
    };
    const result = KINDS[kind].run(kit, {
      target: { kind, namespace: NS, name: NAME },
      signal: controller.signal,
    });
    return { result, controller, cut: () => link.cut(), restore: () => link.restore() };
  };
  return {
    kind,
    invoke,
    stateOf: () => khstateView(kube.state(NS, NAME) ?? null),
    stateVersion: () => kube.state(NS, NAME)?.metadata.resourceVersion ?? '',
    createdPods: () => kube.createdPods,
    podsOfRun: (uuid) => [...kube.pods.values()].filter((p) => p.metadata?.labels?.[RUN_ID_LABEL] === uuid),
    setPodStatus: (name, status) => kube.setPodStatus(NS, name, status),
    // The v2 endpoint (POST /externalCheckStatus/...signed run) storing into the khstate.
    report: async (uuid, { ok, errors }) =>
      (
        await handleReport(
          {
            lookup: noLookup,
            state: { read: (ns, name) => kube.readState(ns, name), replace: (s) => kube.replaceState(s) },
            clock,
            log: silentLog,
            server: 'report-0',
          },
          { method: 'POST', caller: signedCaller(uuid), body: JSON.stringify({ OK: ok, Errors: errors }) },
        )
      ).status,
    until: (test) => kube.until(test),
  };
}

// --- HealthCheck: the HealthCheck itself, status and khrun.dev annotations -----------------------------

function healthCheck(): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name: NAME, namespace: NS },
    spec: { runInterval: '10m', timeout, podSpec: { spec: podSpec } },
  };
}

function healthCheckView(hc: HealthCheck): StateView {
  const status = hc.status;
  const bookkeeping = { metadata: hc.metadata } as KhState;
  const lastResultUnix = Math.max(status?.lastOKUnix ?? 0, status?.lastFailureUnix ?? 0);
  return {
    runUuid: status?.currentUUID ?? '',
    holder: readActiveRun(bookkeeping)?.holder ?? '',
    lastUuid: readLastOutcome(bookkeeping)?.uuid ?? '',
    ok: status?.ok ?? false,
    errors: status?.errors ?? [],
    lastRunMs: lastResultUnix * 1000,
  };
}

function healthCheckHarness(): KindHarness {
  const api = new FakeHealthCheckApi();
  api.put(healthCheck());
  const ids: string[] = [...RUN_UUIDS];
  let invocations = 0;
  // The report endpoint is a process of its own: a port of its own (its own cache of the HealthCheck).
  const endpointPort = healthCheckPort(api);
  const invoke = (runner: string): Invocation => {
    const link = new Link();
    const controller = new AbortController();
    const deps: AcquireDeps = {
      // Each invocation is a process with its own port (and its cache of the last HealthCheck seen).
      kube: linkedPort(healthCheckPort(api), link),
      clock,
      ids: {
        runUuid: () => {
          const next = ids.shift();
          if (!next) throw new Error('out of run UUIDs');
          return next;
        },
      },
      log: silentLog,
    };
    const cfg = invocationConfig(runner, ++invocations, controller.signal);
    const kit: SessionKit = {
      runner,
      ports: { kube: deps.kube, events: noEvents },
      deps: () => deps,
      iterate: (d) => runIteration(d, cfg),
    };
    const target = { kind: 'healthcheck' as const, namespace: NS, name: NAME };
    const result = KINDS.healthcheck.run(kit, { target, signal: controller.signal });
    return { result, controller, cut: () => link.cut(), restore: () => link.restore() };
  };
  return {
    kind: 'healthcheck',
    invoke,
    stateOf: () => healthCheckView(api.check(NS, NAME)),
    stateVersion: () => api.check(NS, NAME).metadata.resourceVersion ?? '',
    createdPods: () => api.createdPods,
    podsOfRun: (uuid) =>
      [...api.pods.values()].filter((p) => p.metadata?.labels?.[HC_POD.runUuidLabel] === uuid),
    setPodStatus: (name, status) => api.setPodStatus(NS, name, status),
    // v3's endpoint (POST /check on a signed run), storing into the HealthCheck.
    report: async (uuid, { ok, errors }) =>
      (
        await handleCheckReport(
          {
            findRun: async () => null,
            state: { read: endpointPort.readState, replace: endpointPort.replaceState },
            clock,
            log: silentLog,
            server: 'report-0',
          },
          { caller: signedCaller(uuid), uuid, body: JSON.stringify({ ok, errors }) },
        )
      ).status,
    until: (test) => api.until(test),
  };
}
