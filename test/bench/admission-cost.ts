import { randomUUID } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { buildCheckerPod } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck } from '../../lib/state/resources.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { createCommandChecks } from './command-check.ts';
import { scaleNamespace } from './scale-setup.ts';
import { type Summary, summarize } from './stats.ts';

// What infra/deploy's admission policies cost a checker pod as its namespace fills with khchecks: policy 2
// (khrun-runner-checker-pod-spec) takes every khcheck of the pod's namespace as a parameter and the API
// server evaluates it once per parameter, so the cost of one pod create grows with the khchecks beside it.
// Measured with server-side dry-run creates (admission runs in full, nothing is stored) of the pod the runner
// would create, as the runner's ServiceAccount (the policies apply) and as the admin (they do not).

export interface AdmissionRow {
  khchecksInNamespace: number;
  /** Dry-run create of a checker pod as khrun-runner, request to answer. */
  runnerMs: Summary;
  /** The same create as the admin, whom the policies do not match: the API server's cost without them. */
  adminMs: Summary;
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

/** n dry-run creates one after another, each timed request to answer; the first is a warm-up, not counted. */
async function dryRunCreates(kc: KubeConfig, pod: V1Pod, n: number): Promise<Summary> {
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = pod.metadata?.namespace ?? '';
  const times: number[] = [];
  for (let i = 0; i <= n; i++) {
    const t0 = performance.now();
    await core.createNamespacedPod({ namespace, body: pod, dryRun: 'All' });
    if (i > 0) times.push(performance.now() - t0);
  }
  return summarize(times);
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
    const runnerMs = await dryRunCreates(runner.kc, pod, opts.n);
    const adminMs = await dryRunCreates(kc, pod, opts.n);
    rows.push({ khchecksInNamespace: have, runnerMs, adminMs });
    opts.log(
      `    ${have} khchecks in the namespace: runner ${runnerMs.median.toFixed(1)} ms median, admin ${adminMs.median.toFixed(1)} ms`,
    );
  }
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch(() => undefined);
  return {
    how: `server-side dry-run creates (admission runs in full, nothing is stored) of the checker pod khrun's runner makes for one khcheck, one after another, request to answer, in-process client; as the khrun-runner ServiceAccount (infra/deploy's admission policies apply) and as the admin (they do not match); the namespace filled with khchecks to each size in turn; n=${opts.n} per cell after one warm-up`,
    rows,
  };
}
