import { writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type V1Job, VersionApi } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { limiter } from '../../lib/core/limit.ts';
import { isNotFound } from '../../lib/kube/errors.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { retryTransient } from '../../lib/kube/transient.ts';
import { runnerJobChecks } from '../../lib/schedule/batch-job.ts';
import { COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL } from '../../lib/schedule/run-job.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { countRequests, waitForAuditFlush } from './audit.ts';
import { type BenchCluster, repoRoot, startBenchCluster } from './bench-cluster.ts';
import { buildForBench } from './build-for-bench.ts';
import { createCommandCheck } from './command-check.ts';
import { declareNodeRoom, deployForScale, scaleNamespace } from './scale-setup.ts';
import { spawnTick } from './spawn-tick.ts';
import { fmtMs, type Summary, summarize } from './stats.ts';

// The tick alone: N khchecks due now, one `khrun tick` spawned as the tick CronJob runs it (the bundle, as
// the khrun-tick ServiceAccount, Jobs from the khrun-runner PodTemplate of infra/deploy into khrun's namespace),
// timed from spawn to exit. The Jobs are real: the Job controller makes their runner pods and the process
// kubelet starts them while the tick still runs (their load is part of what the tick meets). Each sample
// has a fresh namespace; after the tick its khchecks and its Jobs are deleted, so the runners find nothing to
// run and the next sample starts on a quiet cluster. Run alone (it starts its own local cluster):
//
//   flock /tmp/khrun-int.lock npx tsx test/bench/tick-dispatch.ts --n 1000,2000 --repeat 3
//
// (it writes bench/tick-dispatch.json, which serverless.yml's tick timeout is sized from), or from the
// benchmark, with measureTickDispatch on a cluster where deployForScale has run.

const RUN_JOBS = `${MANAGED_BY_LABEL}=${MANAGED_BY},${COMPONENT_LABEL}=run`;

export interface TickDispatchFigure {
  checks: number;
  /** KHRUN_BATCH_SIZE and KHRUN_TICK_CONCURRENCY the tick ran with. */
  batchSize: number;
  concurrency: number;
  /** `khrun tick` spawned to its exit (node start-up included), one sample per repetition. */
  tickMs: Summary;
  tickPeakRssMiB: Summary;
  /** Runner Jobs per tick (each the same in every sample, else the run throws). */
  runnerJobs: number;
  /** The tick's API requests per tick (audit log, the khrun-tick ServiceAccount's), median over samples. */
  tickRequests: number;
  tickRequestsByVerb: Record<string, number>;
  how: string;
}

/** n khchecks, 50 created at a time; they never ran, so with no first-run jitter they are all due at once. */
async function createDueChecks(bench: BenchCluster, namespace: string, n: number) {
  const kc = bench.cluster.kubeConfig;
  for (let i = 0; i < n; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, k) =>
        createCommandCheck(kc, namespace, `c${i + k}`, {
          command: ['/bin/true'],
          runInterval: '1h',
          timeout: '5m',
        }),
      ),
    );
  }
}

/** The runner Jobs that run checks of namespace (a batch's annotation, or a single run's). */
const jobsOf = (jobs: Iterable<V1Job>, namespace: string) =>
  [...jobs].filter((j) => runnerJobChecks(j.metadata).some((c) => c.namespace === namespace));

/** Deletes the sample's namespace and Jobs (their pods with them), and waits until both are gone. */
async function cleanUp(bench: BenchCluster, namespace: string, jobs: V1Job[]) {
  const kc = bench.cluster.kubeConfig;
  await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
  const { batch } = kubeClient(kc);
  const names = new Set(jobs.map((j) => j.metadata?.name ?? ''));
  // Eight at a time, retried while the API server sheds load (80 at once with every error ignored once left
  // 36 Jobs, whose pods then outlived the sample); gone already is fine, any other error ends the run.
  const limit = limiter(8);
  await Promise.all(
    [...names].map((name) =>
      limit(() =>
        retryTransient(() =>
          batch.deleteNamespacedJob({ name, namespace: DEPLOY_NAMESPACE, propagationPolicy: 'Background' }),
        ).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        }),
      ),
    ),
  );
  await waitForSet({
    kc,
    path: '/api/v1/namespaces',
    fieldSelector: `metadata.name=${namespace}`,
    timeoutMs: 300_000,
    description: `namespace ${namespace} (its khchecks and khstates) to be deleted`,
    decide: (items) => (items.size === 0 ? true : undefined),
  });
  await waitForSet({
    kc,
    path: `/api/v1/namespaces/${DEPLOY_NAMESPACE}/pods`,
    timeoutMs: 180_000,
    description: `the runner pods of ${namespace}'s Jobs to be gone`,
    decide: (pods) =>
      [...pods.values()].some((p) => names.has(p.metadata?.labels?.['job-name'] ?? '')) ? undefined : true,
  });
}

/**
 * One sample: n due khchecks in a fresh namespace, one tick, its time and what it did (every check
 * dispatched once, in ceil(n / batchSize) Jobs; otherwise it throws, and no figure is made).
 */
async function sample(
  bench: BenchCluster,
  o: {
    n: number;
    batchSize: number;
    concurrency: number;
    dist: string;
    tickKubeconfig: string;
    tickUser: string;
  },
  namespace: string,
) {
  const kc = bench.cluster.kubeConfig;
  await scaleNamespace(kc, namespace);
  await createDueChecks(bench, namespace, o.n);
  const t0 = Date.now();
  const tick = await spawnTick(o.dist, namespace, {
    KUBECONFIG: o.tickKubeconfig,
    KHRUN_BATCH_SIZE: String(o.batchSize),
    KHRUN_TICK_CONCURRENCY: String(o.concurrency),
  });
  const t1 = Date.now();
  if (tick.code !== 0)
    throw new Error(`khrun tick failed (${tick.code}):\n${tick.stdout.slice(-3000)}\n${tick.stderr}`);
  const summary = /tick: (\d+) checks, (\d+) dispatched/.exec(tick.stdout);
  if (Number(summary?.[2]) !== o.n)
    throw new Error(`the tick dispatched ${summary?.[2]} of ${o.n}: ${summary?.[0]}`);
  const jobs = jobsOf(
    (
      await kc
        .makeApiClient(BatchV1Api)
        .listNamespacedJob({ namespace: DEPLOY_NAMESPACE, labelSelector: RUN_JOBS })
    ).items,
    namespace,
  );
  const states = (
    (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
      namespace,
    })) as { items: KhState[] }
  ).items;
  const claimedBy = new Map(
    states.map((s) => [
      s.metadata.name,
      (JSON.parse(s.metadata.annotations?.[ANNOTATION.dispatch] ?? '{}') as { ref?: string }).ref,
    ]),
  );
  const expectedJobs = Math.ceil(o.n / o.batchSize);
  const membership = new Map(
    jobs.flatMap((j) => runnerJobChecks(j.metadata).map((c) => [c.name, j.metadata?.name])),
  );
  const wrong = [...claimedBy].filter(([name, ref]) => !ref || membership.get(name) !== ref);
  if (jobs.length !== expectedJobs || claimedBy.size !== o.n || wrong.length > 0)
    throw new Error(
      `${jobs.length} Jobs (expected ${expectedJobs}), ${claimedBy.size} claims for ${o.n} checks, ${wrong.length} claims not naming the Job that runs the check`,
    );
  const marker = Date.now();
  await kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(bench.auditLog, 'khrun-admin', marker);
  const requests = await countRequests(bench.auditLog, o.tickUser, t0, t1);
  await cleanUp(bench, namespace, jobs);
  return {
    ms: tick.ms,
    rssMiB: Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(tick.stderr)?.[1]) / 1024,
    jobs: jobs.length,
    requests,
  };
}

/**
 * The tick's time to dispatch n due checks: `repeat` samples, each a fresh namespace of n never-run
 * khchecks and one spawned `khrun tick` (see the file's header). Needs infra/deploy applied
 * (deployForScale) and room on the node for the runner pods (declareNodeRoom).
 */
export async function measureTickDispatch(
  bench: BenchCluster,
  opts: {
    n: number;
    batchSize: number;
    concurrency?: number;
    repeat: number;
    dist: string;
    tickKubeconfig: string;
    tickUser: string;
    log: (line: string) => void;
  },
): Promise<TickDispatchFigure> {
  const o = { ...opts, concurrency: opts.concurrency ?? 32 };
  const samples = [];
  for (let i = 0; i < o.repeat; i++) {
    const s = await sample(bench, o, `tickd-${o.n}-k${o.batchSize}-c${o.concurrency}-${i}`);
    o.log(
      `    ${o.n} due, batch ${o.batchSize}: tick ${fmtMs(s.ms)}, ${s.jobs} Jobs, ${s.requests.total} requests`,
    );
    samples.push(s);
  }
  const jobs = new Set(samples.map((s) => s.jobs));
  if (jobs.size !== 1)
    throw new Error(`runner Jobs per tick differed between samples: ${[...jobs].join(', ')}`);
  const middle = [...samples].sort((a, b) => a.requests.total - b.requests.total)[
    Math.floor(samples.length / 2)
  ]!;
  return {
    checks: o.n,
    batchSize: o.batchSize,
    concurrency: o.concurrency,
    tickMs: summarize(samples.map((s) => s.ms)),
    tickPeakRssMiB: summarize(samples.map((s) => s.rssMiB)),
    runnerJobs: samples[0]!.jobs,
    tickRequests: middle.requests.total,
    tickRequestsByVerb: middle.requests.byVerbResource,
    how:
      `khrun tick spawned (the bundle, node --import maxrss preload) as the khrun-tick ServiceAccount of ` +
      `infra/deploy, spawn to exit, over ${o.n} never-run khchecks due at once (KHRUN_FIRST_RUN_JITTER=0s) ` +
      `in a fresh namespace per sample, KHRUN_BATCH_SIZE=${o.batchSize}, KHRUN_TICK_CONCURRENCY=${o.concurrency}; ` +
      `real runner Jobs (runner pods started by the process kubelet meanwhile); n=${o.repeat} ticks; ` +
      `requests: the tick's own, from the API server's audit log`,
  };
}

/** Alone: its own local cluster, infra/deploy through the bench overlay, the sizes asked for. */
async function main() {
  const { values } = parseArgs({
    options: {
      n: { type: 'string', default: '1000,2000' },
      'batch-size': { type: 'string', default: '25' },
      concurrency: { type: 'string', default: '32' },
      repeat: { type: 'string', default: '3' },
      out: { type: 'string', default: join(repoRoot, 'bench/tick-dispatch.json') },
    },
  });
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const dist = join(repoRoot, '.khrun/tick-dispatch-dist');
  const build = await buildForBench(repoRoot, dist);
  log(
    `built ${build.commit.slice(0, 12)}${build.dirty ? ` + ${build.dirtyPaths.length} changed files` : ''}`,
  );
  const bench = await startBenchCluster(log);
  const figures: TickDispatchFigure[] = [];
  try {
    const cacheDir =
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
    await deployForScale(bench.cluster.kubeconfigPath, cacheDir, dist);
    const sizes = values.n.split(',').map(Number);
    await declareNodeRoom(bench.cluster.kubeConfig, Math.max(...sizes) + 500);
    const tickSa = await bench.serviceAccountKubeConfig(DEPLOY_NAMESPACE, 'khrun-tick');
    const tickKubeconfig = join(bench.cluster.dir, 'tick-dispatch.kubeconfig');
    await writeFile(tickKubeconfig, tickSa.kc.exportConfig(), { mode: 0o600 });
    for (const batchSize of values['batch-size'].split(',').map(Number))
      for (const n of sizes) {
        log(`${n} due checks, batch size ${batchSize}`);
        figures.push(
          await measureTickDispatch(bench, {
            n,
            batchSize,
            concurrency: Number(values.concurrency),
            repeat: Number(values.repeat),
            dist,
            tickKubeconfig,
            tickUser: tickSa.username,
            log,
          }),
        );
      }
  } finally {
    await bench.cluster.stop();
  }
  const out = JSON.stringify({ build, figures }, null, 2);
  await writeFile(values.out, `${out}\n`);
  process.stdout.write(`${out}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
