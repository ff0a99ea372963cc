import { readFile } from 'node:fs/promises';
import { BatchV1Api, type V1Job, VersionApi } from '@kubernetes/client-node';
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
  /** Tick spawned to the last check's outcome in its khstate. */
  allRecordedMs: number;
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
  const namespace = `scale-${n}-k${batchSize}`;
  await scaleNamespace(kc, namespace);
  await createCommandChecks(kc, namespace, n, {
    command: opts.checkerCommand,
    runInterval: '1h',
    // Long enough that a check waiting for the one local kubelet to start its pod is not timed out: the
    // figure is the path's cost, and this machine starts a few pods a second.
    timeout: '30m',
  });
  const batch = kc.makeApiClient(BatchV1Api);
  const before = new Set(
    (await batch.listNamespacedJob({ namespace: 'kuberhealthy', labelSelector: RUN_JOBS })).items.map(
      (j) => j.metadata?.uid,
    ),
  );

  const t0 = Date.now();
  const tick = await spawnTick(opts.dist, namespace, {
    KUBECONFIG: opts.tickKubeconfig,
    KHRUN_BATCH_SIZE: String(batchSize),
  });
  const tickMs = tick.ms;
  if (tick.code !== 0) throw new Error(`khrun tick failed (${tick.code}):\n${tick.stdout}\n${tick.stderr}`);
  const tickPeakRssMiB = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(tick.stderr)?.[1]) / 1024;

  let lastShown = 0;
  const states = await waitForSet<KhState, KhState[]>({
    kc,
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`,
    timeoutMs: 180_000 + n * 800,
    description: `all ${n} checks to record an outcome`,
    decide: (items) => {
      const done = [...items.values()].filter((s) => s.metadata.annotations?.[ANNOTATION.outcome]);
      if (Date.now() - lastShown > 15_000) {
        lastShown = Date.now();
        opts.log(`    ${done.length}/${n} recorded after ${fmtMs(Date.now() - t0)}`);
      }
      return done.length >= n ? done : undefined;
    },
  });
  const allRecordedMs = Date.now() - t0;
  const jobs = await waitForSet<V1Job, V1Job[]>({
    kc,
    path: '/apis/batch/v1/namespaces/kuberhealthy/jobs',
    labelSelector: RUN_JOBS,
    timeoutMs: 300_000,
    description: 'every runner Job of this tick to finish',
    decide: (items) => {
      const mine = [...items.values()].filter((j) => !before.has(j.metadata?.uid));
      return mine.every(jobDone) ? mine : undefined;
    },
  });
  const endMs = Date.now();
  const outcomes: Record<string, number> = {};
  for (const s of states) {
    const kind =
      (JSON.parse(s.metadata.annotations?.[ANNOTATION.outcome] ?? '{}') as { kind?: string }).kind ?? '?';
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
  }

  const procs = opts.processes().filter((p) => p.startedAtMs >= t0);
  const runners = procs.filter((p) => p.container === 'runner');
  const checkers = procs.filter((p) => p.pod.startsWith(`${namespace}/`));
  const rss: number[] = [];
  for (const r of runners) {
    const [ns, pod] = r.pod.split('/');
    const path = bench.cluster.kubelet.podLogPath(ns ?? '', pod ?? '', 'runner');
    const text = path ? await readFile(path, 'utf8').catch(() => '') : '';
    const kb = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(text)?.[1]);
    if (Number.isFinite(kb)) rss.push(kb / 1024);
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
