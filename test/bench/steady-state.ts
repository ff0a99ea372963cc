import { type RequestOptions, request } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { runnerJobChecks } from '../../lib/schedule/batch-job.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL } from '../../lib/state/resources.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { CHECKS_PER_NAMESPACE, createFleet, type ExitedProcess, fleetNamespaces } from './scale.ts';
import { spawnTick } from './spawn-tick.ts';
import { type Summary, summarize } from './stats.ts';

/** Objects of one kind in etcd at one moment (API list counts). */
export interface ObjectCounts {
  runnerJobs: number;
  runnerPods: number;
  checkerPods: number;
  khstates: number;
  events: number;
  /** Every object the API server stores, all kinds (apiserver_storage_objects, summed; refreshed each minute). */
  allObjects: number;
}

export interface SteadyStateFigure {
  how: string;
  checks: number;
  runInterval: string;
  /** ttlSecondsAfterFinished the tick gave the runner Jobs (lib/schedule/job-retention.ts). */
  finishedJobTtlSeconds: number | undefined;
  tickPeriodSeconds: number;
  ticks: number;
  /** allObjects before the checks were created: the cluster without them. */
  objectsBefore: number;
  /** Counts sampled after each tick once settled (after one interval plus the Job TTL). */
  settled: Record<keyof ObjectCounts, Summary>;
  /** The first and the last settled sample: whether a count was still rising. */
  firstSettled: ObjectCounts;
  lastSettled: ObjectCounts;
  /** Check runs completed per minute while settled (checker processes that exited). */
  runsPerMinute: number;
}

async function storedObjects(bench: BenchCluster): Promise<number> {
  const kc = bench.cluster.kubeConfig;
  const url = new URL('/metrics', kc.getCurrentCluster()?.server ?? '');
  const options: RequestOptions = { method: 'GET' };
  await kc.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(url, options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve(body));
    });
    req.once('error', reject);
    req.end();
  });
  let total = 0;
  for (const m of text.matchAll(/^apiserver_storage_objects\{[^}]*\} (\S+)$/gm)) total += Number(m[1]);
  return total;
}

async function countObjects(bench: BenchCluster, namespaces: ReadonlySet<string>): Promise<ObjectCounts> {
  const kc = bench.cluster.kubeConfig;
  const core = kc.makeApiClient(CoreV1Api);
  const inFleet = (o: { metadata?: { namespace?: string } }) => namespaces.has(o.metadata?.namespace ?? '');
  const [jobs, pods, allPods, states, events, allEvents] = await Promise.all([
    kc.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: DEPLOY_NAMESPACE }),
    core.listNamespacedPod({ namespace: DEPLOY_NAMESPACE, labelSelector: 'batch.kubernetes.io/job-name' }),
    core.listPodForAllNamespaces(),
    kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
    }) as Promise<{ items: Array<{ metadata?: { namespace?: string } }> }>,
    core.listNamespacedEvent({ namespace: DEPLOY_NAMESPACE }),
    core.listEventForAllNamespaces(),
  ]);
  const checkerPods = { items: allPods.items.filter(inFleet) };
  const checkerEvents = { items: allEvents.items.filter(inFleet) };
  // Only what these checks made: other sections' Jobs may share khrun's namespace.
  const ours = jobs.items.filter((j) => runnerJobChecks(j.metadata).some((c) => namespaces.has(c.namespace)));
  const jobNames = new Set(ours.map((j) => j.metadata?.name));
  const runnerPods = pods.items.filter((p) =>
    jobNames.has(p.metadata?.labels?.['batch.kubernetes.io/job-name']),
  );
  const podNames = new Set(runnerPods.map((p) => p.metadata?.name));
  const runnerEvents = events.items.filter(
    (e) => jobNames.has(e.involvedObject.name) || podNames.has(e.involvedObject.name),
  );
  return {
    runnerJobs: ours.length,
    runnerPods: runnerPods.length,
    checkerPods: checkerPods.items.length,
    khstates: states.items.filter(inFleet).length,
    events: runnerEvents.length + checkerEvents.items.length,
    allObjects: await storedObjects(bench),
  };
}

/**
 * Deletes the checks' namespace and their runner Jobs and waits until the namespace is gone, so that the
 * sections after this one do not share the machine with its last runs.
 */
export async function removeAll(bench: BenchCluster, namespace: string): Promise<void> {
  const kc = bench.cluster.kubeConfig;
  const batch = kc.makeApiClient(BatchV1Api);
  const jobs = (await batch.listNamespacedJob({ namespace: DEPLOY_NAMESPACE })).items.filter((j) =>
    runnerJobChecks(j.metadata).some((c) => c.namespace === namespace),
  );
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch(() => undefined);
  await Promise.all(
    jobs.map((j) =>
      batch
        .deleteNamespacedJob({
          name: j.metadata?.name ?? '',
          namespace: DEPLOY_NAMESPACE,
          propagationPolicy: 'Background',
        })
        .catch(() => undefined),
    ),
  );
  await waitForSet({
    kc,
    path: '/api/v1/namespaces',
    fieldSelector: `metadata.name=${namespace}`,
    timeoutMs: 600_000,
    description: `namespace ${namespace} to be deleted`,
    decide: (items) => (items.size === 0 ? true : undefined),
  });
}

/**
 * n checks on a short interval, the tick (the bundle, spawned, as khrun-tick, its default batch size) run
 * every tickPeriod for `ticks` periods; after each tick the objects are counted. The samples taken once the
 * first runs' Jobs could have been collected (one interval plus the Job TTL) are the steady state.
 */
export async function measureSteadyState(
  bench: BenchCluster,
  opts: {
    n: number;
    runIntervalSeconds: number;
    tickPeriodSeconds: number;
    ticks: number;
    dist: string;
    checkerCommand: string[];
    tickKubeconfig: string;
    processes: () => ExitedProcess[];
    log: (line: string) => void;
  },
): Promise<SteadyStateFigure> {
  const kc = bench.cluster.kubeConfig;
  const fleet = fleetNamespaces('steady', opts.n);
  const namespaces = new Set(fleet.map((f) => f.namespace));
  const objectsBefore = await storedObjects(bench);
  const runInterval = `${opts.runIntervalSeconds}s`;
  await createFleet(kc, fleet, { command: opts.checkerCommand, runInterval, timeout: '10m' });
  const t0 = Date.now();
  const samples: Array<{ atMs: number; counts: ObjectCounts }> = [];
  for (let i = 0; i < opts.ticks; i++) {
    const due = t0 + i * opts.tickPeriodSeconds * 1000;
    // The tick's schedule, as its CronJob would keep it (the benchmark's period is shorter).
    if (due > Date.now()) await delay(due - Date.now());
    const tick = await spawnTick(opts.dist, [...namespaces].join(','), { KUBECONFIG: opts.tickKubeconfig });
    if (tick.code !== 0) throw new Error(`khrun tick failed (${tick.code}):\n${tick.stderr}`);
    const counts = await countObjects(bench, namespaces);
    samples.push({ atMs: Date.now(), counts });
    opts.log(`    tick ${i + 1}/${opts.ticks} (${tick.ms.toFixed(0)} ms): ${JSON.stringify(counts)}`);
  }
  const jobs = await kc.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: DEPLOY_NAMESPACE });
  const ttl = jobs.items.find((j) => runnerJobChecks(j.metadata).some((c) => namespaces.has(c.namespace)))
    ?.spec?.ttlSecondsAfterFinished;
  const settledFromMs = t0 + (opts.runIntervalSeconds + (ttl ?? 600)) * 1000;
  const settled = samples.filter((s) => s.atMs >= settledFromMs);
  if (settled.length === 0)
    throw new Error('no sample after the steady state was reached: more ticks needed');
  for (const ns of namespaces) await removeAll(bench, ns);
  const pick = (k: keyof ObjectCounts) => summarize(settled.map((s) => s.counts[k]));
  const endMs = samples[samples.length - 1]?.atMs ?? Date.now();
  const runs = opts
    .processes()
    .filter(
      (p) =>
        namespaces.has(p.pod.split('/')[0] ?? '') &&
        p.finishedAtMs >= settledFromMs &&
        p.finishedAtMs <= endMs,
    );
  return {
    how: `${opts.n} khchecks, ${CHECKS_PER_NAMESPACE} to a namespace (runInterval ${runInterval}, a checker that reports at once: the Go checkclient program), khrun tick (the bundle, spawned, as khrun-tick, default batch size) every ${opts.tickPeriodSeconds} s for ${opts.ticks} ticks; after each tick API list counts (the runner Jobs of these checks and their pods in ${DEPLOY_NAMESPACE}; pods, khstates and events in the checks' namespaces, and the events of those Jobs and pods) and apiserver_storage_objects summed over all kinds; the samples from one interval plus the Job TTL after the first tick on. Events are the API server's to expire (--event-ttl, 1 h by default and here), not khrun's: they settle only after an hour, and the first and last samples show how far they still rose`,
    checks: opts.n,
    runInterval,
    finishedJobTtlSeconds: ttl,
    tickPeriodSeconds: opts.tickPeriodSeconds,
    ticks: opts.ticks,
    objectsBefore,
    settled: {
      runnerJobs: pick('runnerJobs'),
      runnerPods: pick('runnerPods'),
      checkerPods: pick('checkerPods'),
      khstates: pick('khstates'),
      events: pick('events'),
      allObjects: pick('allObjects'),
    },
    firstSettled: settled[0]!.counts,
    lastSettled: settled[settled.length - 1]!.counts,
    runsPerMinute: (runs.length / Math.max(1, endMs - settledFromMs)) * 60_000,
  };
}
