import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { resolveKubectl } from '../../lib/local/binaries.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhState,
} from '../../lib/state/resources.ts';
import { countRequests, waitForAuditFlush } from './audit.ts';
import { type BenchCluster, repoRoot } from './bench-cluster.ts';
import { fmtMs, type Summary, summarize } from './stats.ts';

const run = promisify(execFile);
const PRELOAD = join(import.meta.dirname, 'maxrss-preload.mjs');

export interface ScaleFigure {
  checks: number;
  tickMs: number;
  allFinishedMs: number;
  tickPeakRssMiB: number;
  runnerPeakRssMiB: Summary;
  /** Process lifetimes as the local kubelet saw them (start to exit). */
  runnerProcessMs: Summary;
  checkerProcessMs: Summary;
  requestsPerCheck: number;
  outcomes: Record<string, number>;
}

/** The image's entrypoint as local argv (as the integration tests run it), with the peak-memory preload. */
async function entrypoint(dist: string): Promise<string[]> {
  const dockerfile = await readFile(join(repoRoot, 'infra/image/Dockerfile'), 'utf8');
  let argv = JSON.parse(/^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
  if (argv[0]?.endsWith('/tini')) argv = argv.slice(argv[1] === '--' ? 2 : 1);
  argv = argv.map((a) => (a === 'node' ? process.execPath : a.replace(/^\/app\/dist\//, `${dist}/`)));
  return [argv[0] ?? process.execPath, '--import', PRELOAD, ...argv.slice(1)];
}

/** infra/deploy as shipped, applied with kubectl -k through an overlay that only swaps the image for local commands. */
export async function deployForScale(
  bench: BenchCluster,
  kubeconfig: string,
  cacheDir: string,
  dist: string,
): Promise<string> {
  const dir = join(repoRoot, '.khrun/bench-overlay');
  await mkdir(dir, { recursive: true });
  const command = JSON.stringify(await entrypoint(dist));
  const rel = relative(dir, join(repoRoot, 'infra/deploy'));
  await writeFile(
    join(dir, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `resources: [${rel}]`,
      'patches:',
      `  - target: { kind: PodTemplate }`,
      `    patch: '[{"op": "add", "path": "/template/spec/containers/0/command", "value": ${command}}]'`,
      // The benchmark runs its own tick, once; the every-minute CronJob would race it.
      `  - target: { kind: CronJob, name: khrun-tick }`,
      `    patch: '[{"op": "add", "path": "/spec/suspend", "value": true}]'`,
      '',
    ].join('\n'),
  );
  const kubectl = await resolveKubectl({ cacheDir, buildDir: join(repoRoot, 'infra/build') });
  await run(kubectl, [`--kubeconfig=${kubeconfig}`, 'apply', '--server-side', '-k', dir], {
    maxBuffer: 64 << 20,
  });
  void bench;
  return command;
}

async function createChecks(kc: KubeConfig, namespace: string, n: number) {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const script =
    "require('kuberhealthy').ReportSuccess().then(() => process.exit(0), (e) => { console.error(e.message); process.exit(1); });";
  for (let i = 0; i < n; i++) {
    await custom.createNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHCHECK_PLURAL,
      namespace,
      body: {
        apiVersion: `${KH_GROUP}/${KH_VERSION}`,
        kind: 'KuberhealthyCheck',
        metadata: { name: `c${i}`, namespace },
        spec: {
          runInterval: '1h',
          timeout: '5m',
          podSpec: {
            containers: [
              { name: 'check', image: 'node:20-alpine', command: [process.execPath, '-e', script] },
            ],
          },
        },
      },
    });
  }
}

/**
 * One `khrun tick` over n due checks through the real dispatch path: the tick (the bundle, as the
 * khrun-tick ServiceAccount) creates one Job per check from the khrun-runner PodTemplate; the Job
 * controller and scheduler place the runner pods; each runner runs its check to a recorded outcome.
 */
export async function measureScale(
  bench: BenchCluster,
  n: number,
  dist: string,
  users: { tickKubeconfig: string; tickUser: string; runnerUser: string },
  processes: () => Array<{
    pod: string;
    container: string;
    startedAtMs: number;
    finishedAtMs: number;
    uid: string;
  }>,
  progress?: (line: string) => void,
): Promise<ScaleFigure> {
  const kc = bench.cluster.kubeConfig;
  const namespace = `scale-${n}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  await waitForSet({
    kc,
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    fieldSelector: 'metadata.name=default',
    timeoutMs: 30_000,
    description: `the default ServiceAccount of ${namespace}`,
    decide: (items) => (items.size > 0 ? true : undefined),
  });
  await createChecks(kc, namespace, n);

  const t0 = Date.now();
  const tick = await new Promise<{ code: number | null; stderr: string; stdout: string }>(
    (resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          '--import',
          PRELOAD,
          join(dist, 'khrun.mjs'),
          'tick',
          '--namespaces',
          namespace,
          '--job-namespace',
          'kuberhealthy',
        ],
        {
          env: {
            ...process.env,
            KUBECONFIG: users.tickKubeconfig,
            KHRUN_FIRST_RUN_JITTER: '0s',
            POWERTOOLS_LOG_LEVEL: 'ERROR',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => {
        stdout += c;
      });
      child.stderr.on('data', (c: Buffer) => {
        stderr += c;
      });
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    },
  );
  const tickMs = Date.now() - t0;
  if (tick.code !== 0) throw new Error(`khrun tick failed (${tick.code}):\n${tick.stdout}\n${tick.stderr}`);
  const tickPeakRssMiB = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(tick.stderr)?.[1]) / 1024;

  let lastDone = -1;
  const states = await waitForSet<KhState, KhState[]>({
    kc,
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`,
    timeoutMs: 120_000 + n * 3_000,
    description: `all ${n} checks to record an outcome`,
    decide: (items) => {
      const done = [...items.values()].filter((s) => s.metadata.annotations?.[ANNOTATION.outcome]);
      if (done.length !== lastDone) {
        lastDone = done.length;
        if (done.length % 10 === 0)
          progress?.(`    ${done.length}/${n} recorded after ${fmtMs(Date.now() - t0)}`);
      }
      return done.length >= n ? done : undefined;
    },
  });
  const allFinishedMs = Date.now() - t0;
  const outcomes: Record<string, number> = {};
  for (const s of states) {
    const kind =
      (JSON.parse(s.metadata.annotations?.[ANNOTATION.outcome] ?? '{}') as { kind?: string }).kind ?? '?';
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
  }

  const procs = processes().filter((p) => p.startedAtMs >= t0);
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
  const endMs = Date.now();
  const marker = Date.now();
  await bench.cluster.kubeConfig
    .makeApiClient((await import('@kubernetes/client-node')).VersionApi)
    .getCode();
  await waitForAuditFlush(bench.auditLog, 'khrun-admin', marker);
  const tickReq = await countRequests(bench.auditLog, users.tickUser, t0, endMs);
  const runnerReq = await countRequests(bench.auditLog, users.runnerUser, t0, endMs);
  return {
    checks: n,
    tickMs,
    allFinishedMs,
    tickPeakRssMiB,
    runnerPeakRssMiB: summarize(rss),
    runnerProcessMs: summarize(runners.map((p) => p.finishedAtMs - p.startedAtMs)),
    checkerProcessMs: summarize(checkers.map((p) => p.finishedAtMs - p.startedAtMs)),
    requestsPerCheck: (tickReq.total + runnerReq.total) / n,
    outcomes,
  };
}
