import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { buildCheckerPod } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck } from '../../lib/state/resources.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { createCommandChecks } from './command-check.ts';
import { cpuMsOf } from './proc-rss.ts';
import { scaleNamespace } from './scale-setup.ts';
import { type Summary, summarize } from './stats.ts';

// What infra/deploy's admission policies cost a checker pod as its namespace fills with khchecks: policy 2
// (khrun-runner-checker-pod-spec) takes every khcheck of the pod's namespace as a parameter and the API
// server evaluates it once per parameter, so the cost of one pod create grows with the khchecks beside it.
// Measured with server-side dry-run creates (admission runs in full, nothing is stored) of the pod the runner
// would create, as the runner's ServiceAccount (the policies apply) and as the admin (they do not): each
// request to answer, and the API server process's CPU time over the n creates.

export interface AdmissionRow {
  khchecksInNamespace: number;
  /** Dry-run create of a checker pod as khrun-runner, request to answer. */
  runnerMs: Summary;
  /** The same create as the admin, whom the policies do not match: the API server's cost without them. */
  adminMs: Summary;
  /** The API server process's CPU time (user + system) over the runner's creates, per create. */
  runnerApiServerCpuMs?: number;
  /** The same over the admin's creates. */
  adminApiServerCpuMs?: number;
}

export interface AdmissionFigure {
  how: string;
  rows: AdmissionRow[];
}

async function checkerPod(kc: KubeConfig, namespace: string, name: string): Promise<V1Pod> {
  const source = (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHCHECK_PLURAL,
    namespace,
    name,
  })) as KhCheck;
  const validated = validateCheck(source);
  if (!validated.ok) throw new Error(`bench khcheck ${name} is invalid: ${validated.reason}`);
  const now = Date.now();
  return buildCheckerPod({
    check: validated.check,
    runUuid: randomUUID(),
    reportingUrl: 'http://127.0.0.1:9/externalCheckStatus',
    deadlineEpochMs: now + 60_000,
    nowEpochMs: now,
  });
}

/** Dry-run creates of one identity: each timed request to answer, and the API server's CPU time over them. */
interface Creates {
  times: number[];
  cpuMs: number;
}

/** `count` dry-run creates one after another, added to `into`. */
async function dryRunCreates(
  core: CoreV1Api,
  pod: V1Pod,
  count: number,
  apiServerPid: number,
  into: Creates,
): Promise<void> {
  const namespace = pod.metadata?.namespace ?? '';
  const before = await apiServerCpuMs(apiServerPid);
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await core.createNamespacedPod({ namespace, body: pod, dryRun: 'All' });
    into.times.push(performance.now() - t0);
  }
  into.cpuMs += (await apiServerCpuMs(apiServerPid)) - before;
}

/** Blocks of dry-run creates a cell takes in turn: what else the API server does is spread over both. */
const BLOCKS = 4;

/**
 * n dry-run creates as the runner and n as the admin, in alternating blocks (runner, admin, ...), after one
 * warm-up create each: their times, and the API server's CPU time over each identity's blocks, per create.
 */
async function cell(
  runner: KubeConfig,
  admin: KubeConfig,
  pod: V1Pod,
  n: number,
  apiServerPid: number,
): Promise<{ runner: Creates; admin: Creates }> {
  const cores = [runner, admin].map((kc) => kc.makeApiClient(CoreV1Api));
  const out = { runner: { times: [], cpuMs: 0 }, admin: { times: [], cpuMs: 0 } };
  for (const core of cores)
    await core.createNamespacedPod({ namespace: pod.metadata?.namespace ?? '', body: pod, dryRun: 'All' });
  for (let b = 0; b < BLOCKS; b++) {
    const count = Math.floor((n * (b + 1)) / BLOCKS) - Math.floor((n * b) / BLOCKS);
    await dryRunCreates(cores[0]!, pod, count, apiServerPid, out.runner);
    await dryRunCreates(cores[1]!, pod, count, apiServerPid, out.admin);
  }
  return out;
}

async function apiServerCpuMs(pid: number): Promise<number> {
  const ms = await cpuMsOf(pid);
  if (ms === undefined) throw new Error(`kube-apiserver (pid ${pid}) is gone`);
  return ms;
}

/** The local cluster's kube-apiserver process, among its control plane's. */
async function apiServerPidOf(bench: BenchCluster): Promise<number> {
  for (const pid of bench.cluster.controlPlane.pids()) {
    const argv0 = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')[0] ?? '';
    if (argv0.endsWith('kube-apiserver')) return pid;
  }
  throw new Error("no kube-apiserver among the local cluster's control-plane processes");
}

/**
 * One namespace filled to each size in turn (sizes ascending); at each, n dry-run creates of khcheck c0's
 * checker pod as the runner and as the admin. infra/deploy must be applied (its policies and the runner).
 */
export async function measureAdmissionCost(
  bench: BenchCluster,
  opts: { sizes: number[]; n: number; command: string[]; log: (line: string) => void },
): Promise<AdmissionFigure> {
  const kc = bench.cluster.kubeConfig;
  const runner = await bench.serviceAccountKubeConfig(DEPLOY_NAMESPACE, 'khrun-runner');
  const apiServer = await apiServerPidOf(bench);
  const namespace = 'admission-cost';
  await scaleNamespace(kc, namespace);
  const spec = { command: opts.command, runInterval: '1h', timeout: '5m' };
  const rows: AdmissionRow[] = [];
  // c0 is the pod's check at every size; the others only fill the namespace.
  await createCommandChecks(kc, namespace, 1, spec, 'c');
  const pod = await checkerPod(kc, namespace, 'c0');
  let have = 1;
  for (const size of opts.sizes) {
    if (size > have)
      have += (await createCommandChecks(kc, namespace, size - have, spec, `f${have}-`)).length;
    const measured = await cell(runner.kc, kc, pod, opts.n, apiServer);
    const row = {
      khchecksInNamespace: have,
      runnerMs: summarize(measured.runner.times),
      adminMs: summarize(measured.admin.times),
      runnerApiServerCpuMs: measured.runner.cpuMs / opts.n,
      adminApiServerCpuMs: measured.admin.cpuMs / opts.n,
    };
    rows.push(row);
    opts.log(
      `    ${have} khchecks in the namespace: runner ${row.runnerMs.median.toFixed(1)} ms median, ${row.runnerApiServerCpuMs.toFixed(1)} ms of the API server's CPU a create; admin ${row.adminMs.median.toFixed(1)} ms, ${row.adminApiServerCpuMs.toFixed(1)} ms`,
    );
  }
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch(() => undefined);
  return {
    how: `server-side dry-run creates (admission runs in full, nothing is stored) of the checker pod khrun's runner makes for one khcheck, one after another, request to answer, in-process client; as the khrun-runner ServiceAccount (infra/deploy's admission policies apply) and as the admin (they do not match); the namespace filled with khchecks to each size in turn; n=${opts.n} per identity and cell after one warm-up each, in ${BLOCKS} alternating blocks (runner, admin, ...); the API server's CPU a create: its process's user + system time (/proc, 10 ms steps) over an identity's blocks, divided by n (it serves the cluster's other clients meanwhile: the controllers, the scheduler, the process kubelet)`,
    rows,
  };
}
