import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  type KubernetesObject,
  type V1Job,
  VersionApi,
} from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from '../../lib/healthcheck/resources.ts';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL } from '../../lib/schedule/run-job.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { dropNamespace, freshNamespace } from '../integration/helpers/cluster.ts';
import { dropV3Finalizers, startKuberhealthyV3 } from '../integration/helpers/kuberhealthy-v3.ts';
import { waitForAuditFlush } from './audit.ts';
import { type BenchCluster, repoRoot } from './bench-cluster.ts';
import { deployedTickEnv } from './deployed-tick-env.ts';
import { createFleetRow, type FleetSystem, fleetRowNamespaces } from './fleet-v3-checks.ts';
import { type FleetRow, type RecordedCheck, rowFigures } from './fleet-v3-figures.ts';
import { auditRequests } from './kh-audit.ts';
import { cpuMsOf, pidOf, processStartMs, sampleRss } from './proc-rss.ts';
import { exitCpuMs, rowCpuMeter } from './row-cpu.ts';
import type { ExitedProcess } from './scale.ts';
import { spawnTick } from './spawn-tick.ts';
import { fmtMs } from './stats.ts';

// One row of the fleet beside Kuberhealthy v3 (issue 27 item 2): n checks due at once, run by one system
// alone on the local cluster, timed from the system's start to the last first outcome.

const loads = () => loadavg().map((x) => Math.round(x * 100) / 100);
const RUN_JOBS = `${MANAGED_BY_LABEL}=${MANAGED_BY},${COMPONENT_LABEL}=run`;

export interface RowContext {
  bench: BenchCluster;
  moduleDir: string;
  dist: string;
  v3Binary: string;
  tickKubeconfig: string;
  tickUser: string;
  runnerUser: string;
  processes: () => ExitedProcess[];
  log: (line: string) => void;
  /** Extra node flags for the spawned tick (e.g. --cpu-prof). */
  tickNodeArgs?: string[];
  /** Where the runners write V8 CPU profiles (flags in the runner PodTemplate's command while the row runs). */
  runnerProfileDir?: string;
  /** More node flags for the runners (KHRUN_BENCH_FLEET_RUNNER_FLAGS, e.g. an --import of a counting preload). */
  runnerNodeArgs?: string[];
}

/**
 * Adds node flags to the runner PodTemplate's command while fn runs (the tick copies it into each Job):
 * --cpu-prof is refused in NODE_OPTIONS, so the flags go after the node binary.
 */
async function withRunnerFlags<T>(ctx: RowContext, flags: string[], fn: () => Promise<T>): Promise<T> {
  if (!flags.length) return fn();
  const core = ctx.bench.cluster.kubeConfig.makeApiClient(CoreV1Api);
  const at = { name: 'khrun-runner', namespace: DEPLOY_NAMESPACE };
  const original = await core.readNamespacedPodTemplate(at);
  const patched = structuredClone(original);
  const runner = patched.template?.spec?.containers.find((c) => c.name === 'runner');
  const [node, ...rest] = runner?.command ?? [];
  if (!runner || !node)
    throw new Error('the khrun-runner PodTemplate has no runner container with a command');
  runner.command = [node, ...flags, ...rest];
  await core.replaceNamespacedPodTemplate({ ...at, body: patched });
  try {
    return await fn();
  } finally {
    const now = await core.readNamespacedPodTemplate(at);
    now.template = original.template;
    await core.replaceNamespacedPodTemplate({ ...at, body: now });
  }
}

/** Waits until every check of the row has an outcome; resolves with when each was first seen recorded. */
function watchOutcomes(
  ctx: RowContext,
  system: FleetSystem,
  namespaces: ReadonlySet<string>,
  n: number,
  timeoutMs: number,
  t0: () => number,
) {
  const seen = new Map<string, RecordedCheck>();
  let shownMs = 0;
  const abort = new AbortController();
  const done = waitForSet<KubernetesObject, true>({
    kc: ctx.bench.cluster.kubeConfig,
    signal: abort.signal,
    path:
      system === 'khrun'
        ? `/apis/${KH_GROUP}/${KH_VERSION}/${KHSTATE_PLURAL}`
        : `/apis/${HC_GROUP}/${HC_VERSION}/${HC_PLURAL}`,
    timeoutMs,
    description: `all ${n} checks to record an outcome`,
    decide: (items) => {
      const now = Date.now();
      for (const o of items.values()) {
        const key = `${o.metadata?.namespace}/${o.metadata?.name}`;
        if (!namespaces.has(o.metadata?.namespace ?? '') || seen.has(key)) continue;
        const r = recordOf(system, o);
        if (r) seen.set(key, { ...r, atMs: now });
      }
      if (now - shownMs > 15_000) {
        shownMs = now;
        ctx.log(`    ${seen.size}/${n} recorded after ${fmtMs(now - t0())}`);
      }
      return seen.size >= n ? true : undefined;
    },
  });
  done.catch(() => undefined);
  return { done, seen, stop: () => abort.abort() };
}

/** A check's first outcome as its object shows it; undefined while it has none. */
function recordOf(system: FleetSystem, o: KubernetesObject): Omit<RecordedCheck, 'atMs'> | undefined {
  if (system === 'v3') {
    const s = (o as HealthCheck).status;
    if ((s?.successCount ?? 0) + (s?.failureCount ?? 0) < 1) return undefined;
    return { ok: s?.ok === true, error: s?.errors?.[0] };
  }
  const state = o as KhState;
  const outcome = state.metadata.annotations?.[ANNOTATION.outcome];
  if (!outcome) return undefined;
  return { ok: state.spec?.OK === true, error: state.spec?.Errors?.[0] };
}

/** Every request of the given users, once the audit log has caught up with now. */
async function requestsOf(ctx: RowContext, users: string[]) {
  const kc = ctx.bench.cluster.kubeConfig;
  const marker = Date.now();
  await kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(ctx.bench.auditLog, 'khrun-admin', marker);
  return auditRequests(ctx.bench.auditLog, users);
}

/** Where a row's tick and runner logs are kept (the cluster's pod logs go with it): .khrun/bench-logs/ROW. */
const logsDir = (row: string) => join(repoRoot, '.khrun/bench-logs', row);

/**
 * The peak RSS and the CPU each runner printed at exit (the maxRSS preload), from its log; each log is kept
 * in keepIn (a row that lost a check can be traced to the run that did not record it).
 */
async function runnerExits(
  ctx: RowContext,
  sinceMs: number,
  keepIn: string,
): Promise<{ peaks: number[]; cpuMs?: number }> {
  const peaks: number[] = [];
  let cpuMs: number | undefined = 0;
  await mkdir(keepIn, { recursive: true });
  for (const p of ctx.processes().filter((x) => x.container === 'runner' && x.startedAtMs >= sinceMs)) {
    const [ns, pod] = p.pod.split('/');
    const path = ctx.bench.cluster.kubelet.podLogPath(ns ?? '', pod ?? '', 'runner');
    const text = path ? await readFile(path, 'utf8').catch(() => '') : '';
    await writeFile(join(keepIn, `${pod}.log`), text);
    // Lines a runner preload of KHRUN_BENCH_FLEET_RUNNER_FLAGS printed for the benchmark's log.
    for (const line of text.split('\n'))
      if (line.startsWith('KHRUN_BENCH ')) ctx.log(`    ${p.pod}: ${line}`);
    const kb = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(text)?.[1]);
    if (Number.isFinite(kb)) peaks.push(kb / 1024);
    // A runner that printed no CPU (killed) leaves the runners' total unknown rather than short.
    const ms = exitCpuMs(text);
    cpuMs = cpuMs === undefined || ms === undefined ? undefined : cpuMs + ms;
  }
  return { peaks, cpuMs };
}

/**
 * khrun: one `khrun tick` (first-run jitter 0s; batch size and concurrency as the khrun-tick CronJob of
 * infra/deploy sets them) over the row's khchecks, its runner Jobs.
 */
export async function khrunRow(ctx: RowContext, n: number, timeoutMs: number): Promise<FleetRow> {
  const kc = ctx.bench.cluster.kubeConfig;
  const before = loads();
  const namespaces = await createFleetRow(kc, ctx.moduleDir, 'khrun', n);
  const batch = kc.makeApiClient(BatchV1Api);
  const jobsBefore = new Set(
    (await batch.listNamespacedJob({ namespace: DEPLOY_NAMESPACE, labelSelector: RUN_JOBS })).items.map(
      (j) => j.metadata?.uid,
    ),
  );
  let t0 = Date.now();
  const outcomes = watchOutcomes(ctx, 'khrun', namespaces, n, timeoutMs, () => t0);
  // Every runner Job of this tick ended: the runners' last requests (their pods' removal, their exit) are
  // the row's too, and runners that all ended before every check was recorded end the row.
  const jobsEnded = waitForSet<V1Job, V1Job[]>({
    kc,
    path: `/apis/batch/v1/namespaces/${DEPLOY_NAMESPACE}/jobs`,
    labelSelector: RUN_JOBS,
    timeoutMs: timeoutMs + 300_000,
    description: 'every runner Job of the tick to end',
    decide: (items) => {
      const mine = [...items.values()].filter((j) => !jobsBefore.has(j.metadata?.uid));
      const ended = (j: V1Job) => (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0;
      return mine.length > 0 && mine.every(ended) ? mine : undefined;
    },
  }).catch(() => [] as V1Job[]);
  const profile = [
    ...(ctx.runnerProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${ctx.runnerProfileDir}`] : []),
    ...(ctx.runnerNodeArgs ?? []),
  ];
  let cpu: Awaited<ReturnType<typeof rowCpuMeter>> | undefined;
  const { tick, endedBy } = await withRunnerFlags(ctx, profile, async () => {
    cpu = await rowCpuMeter(ctx.bench);
    t0 = Date.now();
    const tick = await spawnTick(
      ctx.dist,
      [...namespaces].join(','),
      { ...deployedTickEnv(), KUBECONFIG: ctx.tickKubeconfig, KHRUN_FIRST_RUN_JITTER: '0s' },
      ctx.tickNodeArgs,
    );
    if (tick.code !== 0) throw new Error(`khrun tick failed (${tick.code}):\n${tick.stdout}\n${tick.stderr}`);
    const endedBy = await Promise.race([
      outcomes.done.then(
        () => 'all recorded' as const,
        () => 'deadline' as const,
      ),
      jobsEnded.then(() => 'runners ended' as const),
    ]);
    return { tick, endedBy };
  });
  const recordedAtMs = Date.now();
  outcomes.stop();
  await mkdir(logsDir(`khrun-${n}`), { recursive: true });
  await writeFile(join(logsDir(`khrun-${n}`), 'tick.log'), `${tick.stdout}\n${tick.stderr}`);
  const unrecorded = fleetRowNamespaces('khrun', n).flatMap(({ namespace, checks }) =>
    Array.from({ length: checks }, (_, i) => `${namespace}/c${i}`).filter((k) => !outcomes.seen.has(k)),
  );
  if (unrecorded.length) ctx.log(`    not recorded: ${unrecorded.slice(0, 10).join(', ')}`);
  const jobs = await jobsEnded;
  const endMs = Date.now();
  const runners = await runnerExits(ctx, t0, logsDir(`khrun-${n}`));
  // The tick's and every runner's own CPU, from time zero until the last runner ended.
  const tickCpuMs = exitCpuMs(tick.stderr);
  const rowCpu = await cpu!.stop(
    tickCpuMs === undefined || runners.cpuMs === undefined ? undefined : tickCpuMs + runners.cpuMs,
  );
  const requests = await requestsOf(ctx, [ctx.tickUser, ctx.runnerUser]);
  return rowFigures({
    system: 'khrun',
    n,
    t0,
    recordedAtMs,
    endMs,
    endedBy,
    recorded: outcomes.seen,
    namespaces,
    requests,
    users: [ctx.tickUser, ctx.runnerUser],
    podCreator: ctx.runnerUser,
    processes: ctx.processes(),
    memory: {
      tickMiB: Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(tick.stderr)?.[1]) / 1024,
      runnersMiB: runners.peaks,
    },
    cpu: rowCpu,
    tickMs: tick.ms,
    runnerJobs: jobs.length,
    loadAverage: { before, after: loads() },
  });
}

/**
 * Kuberhealthy v3.0.0's controller (its deploy/kustomize/base Deployment, one replica) started on the row's
 * HealthChecks, which it runs at once (each is due: it never ran); timed from its process's start.
 */
export async function v3Row(ctx: RowContext, n: number, timeoutMs: number): Promise<FleetRow> {
  const kc = ctx.bench.cluster.kubeConfig;
  const before = loads();
  const namespaces = await createFleetRow(kc, ctx.moduleDir, 'v3', n);
  const controllerNs = await freshNamespace(kc, 'fv3-ctl');
  let t0 = Date.now();
  const outcomes = watchOutcomes(ctx, 'v3', namespaces, n, timeoutMs, () => t0);
  const cpu = await rowCpuMeter(ctx.bench);
  const v3 = await startKuberhealthyV3(kc, controllerNs);
  try {
    const pid = await pidOf(ctx.v3Binary);
    if (!pid) throw new Error(`no process of ${ctx.v3Binary} runs, though its pod does`);
    t0 = (await processStartMs(pid)) ?? t0;
    const rss = sampleRss(pid, 1_000);
    const endedBy = await outcomes.done.then(
      () => 'all recorded' as const,
      () => 'deadline' as const,
    );
    const recordedAtMs = Date.now();
    // v3's controller's own CPU since it started, from before its pod was created until all were recorded.
    const rowCpu = await cpu.stop(await cpuMsOf(pid));
    const memory = await rss.stop();
    const pod = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedPod({ namespace: controllerNs, name: v3.podName });
    const user = `system:serviceaccount:${controllerNs}:${pod.spec?.serviceAccountName ?? 'default'}`;
    const requests = await requestsOf(ctx, [user]);
    return rowFigures({
      system: 'v3',
      n,
      t0,
      recordedAtMs,
      endMs: recordedAtMs,
      endedBy,
      recorded: outcomes.seen,
      namespaces,
      requests,
      users: [user],
      podCreator: user,
      processes: ctx.processes(),
      memory: { controllerMiB: memory.peakMiB },
      cpu: rowCpu,
      loadAverage: { before, after: loads() },
    });
  } finally {
    await v3.stop();
    for (const ns of namespaces) await dropV3Finalizers(kc, ns);
    await dropNamespace(kc, controllerNs);
  }
}

/** The row's namespaces, as fleetRowNamespaces names them (for removal). */
export { fleetRowNamespaces } from './fleet-v3-checks.ts';
