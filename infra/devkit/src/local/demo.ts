import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { BatchV1Api, type KubeConfig, type V1CronJob, type V1Job } from '@kubernetes/client-node';
import { EXIT } from '../../../../lib/core/exit-codes.ts';
import { applyObjects, loadManifests } from '../../../../lib/kube/apply.ts';
import { waitForSet } from '../../../../lib/kube/list-watch.ts';
import { readConsecutiveFailures, readLastOutcome } from '../../../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../../../lib/state/resources.ts';
import { buildBundles } from '../build/bundle.ts';
import { startLocalCluster } from './cluster.ts';

export interface DemoOptions {
  root: string;
  cacheDir: string;
  kubebuilderAssets?: string;
  signal: AbortSignal;
  write: (line: string) => void;
}

const NAMESPACE = 'khrun';
const TICK_CRONJOB = 'khrun-tick';
const RECORD_TIMEOUT_MS = 180_000;

/**
 * `npm start`: khrun the way it runs in a cluster, on the local cluster. The bundles are built (the
 * process kubelet runs the image ghcr.io/khrun/khrun as the local build of its entrypoint), infra/deploy
 * and the example khchecks are applied unchanged, a tick is started at once from the tick CronJob (as
 * `kubectl create job --from=cronjob/khrun-tick` does, without the first-run jitter), it dispatches the
 * checks in runner Jobs (up to KHRUN_BATCH_SIZE checks each: the examples share one), each checker reports,
 * and the outcomes recorded in the khstates are printed.
 */
export async function demoCommand(opts: DemoOptions): Promise<number> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const distDir = join(opts.root, '.khrun/demo-dist');
  log('building the bundles (the image khrun runs them)');
  await buildBundles({ root: opts.root, outdir: distDir });
  const cluster = await startLocalCluster({
    kubebuilderAssets: opts.kubebuilderAssets,
    cacheDir: opts.cacheDir,
    buildDir: join(opts.root, 'infra/build'),
    crdDir: join(opts.root, 'infra/crds'),
    khrunDistDir: distDir,
    onProgress: log,
    terminal: { isTTY: Boolean(process.stderr.isTTY), write: (text) => process.stderr.write(text) },
    signal: opts.signal,
  });
  try {
    const kc = cluster.kubeConfig;
    log(
      `local cluster up (Kubernetes ${cluster.kubernetesVersion}); applying infra/deploy and infra/examples`,
    );
    const checks = await applyDeployAndExamples(kc, opts.root);
    const tickJob = await startTick(kc);
    log(`tick Job ${tickJob} started from CronJob ${TICK_CRONJOB}; waiting for ${checks.length} outcomes`);
    const states = await waitForOutcomes(kc, checks, opts.signal);
    const runners = await runnerJobs(kc);
    log(`the tick dispatched ${runners.length} runner Jobs: ${runners.join(', ')}`);
    opts.write(outcomeTable(states));
    return EXIT.ok;
  } finally {
    log('tearing the local cluster down');
    await cluster.stop();
  }
}

/** infra/deploy's resources (the CRDs are installed already) and the example checks; the check names. */
async function applyDeployAndExamples(kc: KubeConfig, root: string): Promise<string[]> {
  const deploy = ['namespace.yaml', 'runner.yaml', 'tick.yaml'].map((f) => join(root, 'infra/deploy', f));
  await applyObjects(kc, await loadManifests(deploy));
  const dir = join(root, 'infra/examples');
  // kustomization.yaml is kustomize's index of these files, not an object to apply.
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort();
  const objects = await loadManifests(files.map((f) => join(dir, f)));
  await applyObjects(kc, objects);
  return objects.filter((o) => o.kind === 'KuberhealthyCheck').map((o) => o.metadata?.name ?? '');
}

/** A Job from the tick CronJob's template, at once and without the first-run jitter. */
async function startTick(kc: KubeConfig): Promise<string> {
  const batch = kc.makeApiClient(BatchV1Api);
  const cron: V1CronJob = await batch.readNamespacedCronJob({ name: TICK_CRONJOB, namespace: NAMESPACE });
  const spec = structuredClone(cron.spec?.jobTemplate.spec);
  const container = spec?.template.spec?.containers[0];
  if (!spec || !container) throw new Error(`CronJob ${NAMESPACE}/${TICK_CRONJOB} has no job template`);
  container.env = [...(container.env ?? []), { name: 'KHRUN_FIRST_RUN_JITTER', value: '0s' }];
  const job: V1Job = {
    metadata: {
      name: `${TICK_CRONJOB}-demo`,
      namespace: NAMESPACE,
      annotations: { 'cronjob.kubernetes.io/instantiate': 'manual' },
    },
    spec,
  };
  await batch.createNamespacedJob({ namespace: NAMESPACE, body: job });
  return job.metadata?.name ?? '';
}

/** Waits (by watch) until every check has a recorded outcome; the khstates, by check name. */
function waitForOutcomes(kc: KubeConfig, checks: string[], signal: AbortSignal): Promise<KhState[]> {
  return waitForSet<KhState, KhState[]>({
    kc,
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${NAMESPACE}/${KHSTATE_PLURAL}`,
    timeoutMs: RECORD_TIMEOUT_MS,
    signal,
    description: `an outcome recorded for each of ${checks.join(', ')}`,
    decide: (items) => {
      const states = checks.map((c) => items.get(`${NAMESPACE}/${c}`));
      const done = states.every((s) => s && readLastOutcome(s) && !s.metadata.annotations?.['khrun.dev/run']);
      return done ? (states as KhState[]) : undefined;
    },
  });
}

async function runnerJobs(kc: KubeConfig): Promise<string[]> {
  const jobs = await kc.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: NAMESPACE });
  return jobs.items
    .map((j) => j.metadata?.name ?? '')
    .filter((name) => !name.startsWith(TICK_CRONJOB))
    .sort();
}

function outcomeTable(states: KhState[]): string {
  const rows = [['CHECK', 'OK', 'OUTCOME', 'DURATION', 'FAILURES', 'RECORDED BY', 'ERROR']];
  for (const state of states) {
    rows.push([
      `${NAMESPACE}/${state.metadata.name}`,
      String(state.spec.OK),
      readLastOutcome(state)?.kind ?? '-',
      state.spec.RunDuration,
      String(readConsecutiveFailures(state)),
      state.spec.AuthoritativePod,
      state.spec.Errors[0] ?? '',
    ]);
  }
  return formatTable(rows);
}

export function formatTable(rows: string[][]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
