import { readFile } from 'node:fs/promises';
import { BatchV1Api, CustomObjectsApi, type V1Job, VersionApi } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL } from '../../lib/schedule/run-job.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { countRequests, waitForAuditFlush } from './audit.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { createCommandChecks } from './command-check.ts';
import { nodeRoom, scaleNamespace } from './scale-setup.ts';
import { spawnTick } from './spawn-tick.ts';
import { fmtMs, type Summary, summarize } from './stats.ts';

/** A process the process kubelet ran to exit (its 'container exited' event). */
export interface ExitedProcess {
  pod: string;
  container: string;
  uid: string;
  startedAtMs: number;
  finishedAtMs: number;
}

export interface ScaleFigure {
  checks: number;
  /** KHRUN_BATCH_SIZE the tick ran with (1: one Job per check). */
  batchSize: number;
  /** The tick, spawned as a process (the bundle, as the khrun-tick ServiceAccount): spawn to exit. */
  tickMs: number;
  tickPeakRssMiB: number;
  /** Tick spawned to the last check's outcome in its khstate; undefined when not every check got one. */
  allRecordedMs?: number;
  /** Checks with an outcome once every runner Job had ended (n when the row is complete). */
  recorded: number;
  /** An incomplete row: tick spawned to the last outcome seen. */
  lastRecordedMs?: number;
  /** Checks a runner could not run, by the error it gave (its per-check output line). */
  runnerFailures: Record<string, number>;
  runnerJobs: number;
  runnerPods: number;
  checkerPods: number;
  /** Peak RSS of each runner process (a batch runner drives up to batchSize checks). */
  runnerPeakRssMiB: Summary;
  runnerProcessMs: Summary;
  checkerProcessMs: Summary;
  /** API requests by identity from the tick's spawn to the last runner's exit, from the audit log. */
  requests: { tick: number; runner: number; perCheck: number; tickByVerb: Record<string, number> };
  outcomes: Record<string, number>;
  /** The node's declared room at the end (declareNodeRoom), to show it held. */
  nodeRoom: { pods: string; cpu: string };
}

const RUN_JOBS = `${MANAGED_BY_LABEL}=${MANAGED_BY},${COMPONENT_LABEL}=run`;

/**
 * khchecks per namespace in the scale and steady-state sections. infra/deploy's admission policy checks a
 * checker pod against every khcheck of its namespace (the admission section measures what that costs by
 * size); with thousands in one namespace, that evaluation is what this machine's API server would spend
 * its 2 cores on, not khrun's path. Fleets that large spread over teams' namespaces; docs/permissions.md
 * says so.
 */
export const CHECKS_PER_NAMESPACE = 100;

/** The namespaces a fleet of n checks is spread over, CHECKS_PER_NAMESPACE each, and how many go into each. */
export function fleetNamespaces(prefix: string, n: number): Array<{ namespace: string; checks: number }> {
  return Array.from({ length: Math.ceil(n / CHECKS_PER_NAMESPACE) }, (_, i) => ({
    namespace: `${prefix}-${i}`,
    checks: Math.min(CHECKS_PER_NAMESPACE, n - i * CHECKS_PER_NAMESPACE),
  }));
}

/** Creates the fleet's namespaces and their khchecks (c0.. in each). */
export async function createFleet(
  kc: Parameters<typeof createCommandChecks>[0],
  fleet: Array<{ namespace: string; checks: number }>,
  spec: Parameters<typeof createCommandChecks>[3],
): Promise<void> {
  for (const { namespace, checks } of fleet) {
    await scaleNamespace(kc, namespace);
    await createCommandChecks(kc, namespace, checks, spec);
  }
}

/** The scale section's namespaces for one row. */
export const scaleFleet = (n: number, batchSize: number) => fleetNamespaces(`scale-${n}-k${batchSize}`, n);

const jobDone = (j: V1Job) => (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0;

/**
 * One `khrun tick` over n due checks through the real dispatch path: the tick (the bundle, as the
 * khrun-tick ServiceAccount, KHRUN_BATCH_SIZE=batchSize) creates runner Jobs from the khrun-runner
 * PodTemplate; the Job controller and scheduler place the runner pods; each runner runs its checks to a
 * recorded outcome. Waits for every outcome, then for every runner Job to finish (their peak RSS is printed
 * at exit).
 */
export async function measureScale(
  bench: BenchCluster,
  opts: {
    n: number;
    batchSize: number;
    dist: string;
    checkerCommand: string[];
    tickKubeconfig: string;
    tickUser: string;
    runnerUser: string;
    processes: () => ExitedProcess[];
    log: (line: string) => void;
  },
): Promise<ScaleFigure> {
  const { n, batchSize } = opts;
  const kc = bench.cluster.kubeConfig;
  const fleet = scaleFleet(n, batchSize);
  const namespaces = new Set(fleet.map((f) => f.namespace));
  await createFleet(kc, fleet, {
    command: opts.checkerCommand,
    runInterval: '1h',
    // Long enough that a check waiting for the one local kubelet to start its pod is not timed out: the
    // figure is the path's cost, and this machine starts a few pods a second.
    timeout: '30m',
  });
  const batch = kc.makeApiClient(BatchV1Api);
  const before = new Set(
    (await batch.listNamespacedJob({ namespace: DEPLOY_NAMESPACE, labelSelector: RUN_JOBS })).items.map(
      (j) => j.metadata?.uid,
    ),
  );

  const t0 = Date.now();
  const tick = await spawnTick(opts.dist, [...namespaces].join(','), {
    KUBECONFIG: opts.tickKubeconfig,
    KHRUN_BATCH_SIZE: String(batchSize),
  });
  const tickMs = tick.ms;
  if (tick.code !== 0) throw new Error(`khrun tick failed (${tick.code}):\n${tick.stdout}\n${tick.stderr}`);
  const tickPeakRssMiB = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(tick.stderr)?.[1]) / 1024;

  // Until every check has an outcome, or every runner Job has ended without recording them all (then no
  // more will come: the row says how many were recorded and why the others were not).
  let lastShown = 0;
  let lastCount = 0;
  let lastRecordedAtMs: number | undefined;
  const stop = new AbortController();
  const timeoutMs = 180_000 + n * 800;
  const allRecorded = waitForSet<KhState, true>({
    kc,
    path: `/apis/${KH_GROUP}/${KH_VERSION}/${KHSTATE_PLURAL}`,
    timeoutMs,
    signal: stop.signal,
    description: `all ${n} checks to record an outcome`,
    decide: (items) => {
      const count = [...items.values()].filter(
        (x) => namespaces.has(x.metadata.namespace ?? '') && x.metadata.annotations?.[ANNOTATION.outcome],
      ).length;
      if (count > lastCount) [lastCount, lastRecordedAtMs] = [count, Date.now()];
      if (Date.now() - lastShown > 15_000) {
        lastShown = Date.now();
        opts.log(`    ${count}/${n} recorded after ${fmtMs(Date.now() - t0)}`);
      }
      return count >= n ? true : undefined;
    },
  });
  const jobsEnded = waitForSet<V1Job, V1Job[]>({
    kc,
    path: `/apis/batch/v1/namespaces/${DEPLOY_NAMESPACE}/jobs`,
    labelSelector: RUN_JOBS,
    timeoutMs: timeoutMs + 300_000,
    description: 'every runner Job of this tick to end',
    decide: (items) => {
      const mine = [...items.values()].filter((j) => !before.has(j.metadata?.uid));
      return mine.length > 0 && mine.every(jobDone) ? mine : undefined;
    },
  });
  // The outcome wait's own time limit ending means "not all": the row then ends with the runner Jobs.
  const first = await Promise.race([
    allRecorded.then(
      () => 'all' as const,
      () => jobsEnded.then(() => 'jobs' as const),
    ),
    jobsEnded.then(() => 'jobs' as const),
  ]);
  const allRecordedMs = first === 'all' ? Date.now() - t0 : undefined;
  stop.abort();
  await allRecorded.catch(() => undefined);
  const jobs = await jobsEnded;
  const endMs = Date.now();
  const states = (
    (await kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
    })) as { items: KhState[] }
  ).items.filter(
    (x) => namespaces.has(x.metadata.namespace ?? '') && x.metadata.annotations?.[ANNOTATION.outcome],
  );
  const outcomes: Record<string, number> = {};
  for (const x of states) {
    const kind =
      (JSON.parse(x.metadata.annotations?.[ANNOTATION.outcome] ?? '{}') as { kind?: string }).kind ?? '?';
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
  }

  const procs = opts.processes().filter((p) => p.startedAtMs >= t0);
  const runners = procs.filter((p) => p.container === 'runner');
  const checkers = procs.filter((p) => namespaces.has(p.pod.split('/')[0] ?? ''));
  const rss: number[] = [];
  const runnerFailures: Record<string, number> = {};
  for (const r of runners) {
    const [ns, pod] = r.pod.split('/');
    const path = bench.cluster.kubelet.podLogPath(ns ?? '', pod ?? '', 'runner');
    const text = path ? await readFile(path, 'utf8').catch(() => '') : '';
    const kb = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(text)?.[1]);
    if (Number.isFinite(kb)) rss.push(kb / 1024);
    // A batch runner's per-check lines: a check it could not run says why (e.g. an API server 504).
    for (const m of text.matchAll(/"result":"failed","error":"([^"]{0,120})/g))
      runnerFailures[m[1] ?? '?'] = (runnerFailures[m[1] ?? '?'] ?? 0) + 1;
  }
  // A marker request after the window: once it is in the (batched) audit log, so is every earlier one.
  const marker = Date.now();
  await kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(bench.auditLog, 'khrun-admin', marker);
  const tickReq = await countRequests(bench.auditLog, opts.tickUser, t0, endMs);
  const runnerReq = await countRequests(bench.auditLog, opts.runnerUser, t0, endMs);
  return {
    checks: n,
    batchSize,
    tickMs,
    tickPeakRssMiB,
    allRecordedMs,
    recorded: states.length,
    ...(allRecordedMs === undefined && lastRecordedAtMs ? { lastRecordedMs: lastRecordedAtMs - t0 } : {}),
    runnerFailures,
    runnerJobs: jobs.length,
    runnerPods: runners.length,
    checkerPods: checkers.length,
    runnerPeakRssMiB: summarize(rss),
    runnerProcessMs: summarize(runners.map((p) => p.finishedAtMs - p.startedAtMs)),
    checkerProcessMs: summarize(checkers.map((p) => p.finishedAtMs - p.startedAtMs)),
    requests: {
      tick: tickReq.total,
      runner: runnerReq.total,
      perCheck: (tickReq.total + runnerReq.total) / n,
      tickByVerb: tickReq.byVerbResource,
    },
    outcomes,
    nodeRoom: await nodeRoom(kc),
  };
}
