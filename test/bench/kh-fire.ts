import { setTimeout as sleep } from 'node:timers/promises';
import { BatchV1Api, CoreV1Api, type KubeConfig, type V1Job } from '@kubernetes/client-node';
import type { KindName } from '../../lib/core/run-target.ts';
import { type RunJobOptions, runJob } from '../../lib/schedule/run-job.ts';

/** Label on the runner Jobs this section creates, so it finds and removes them. */
export const BENCH_JOB_LABEL = 'khrun.dev/bench-kuberhealthy';

/** One check khrun runs on a schedule: a runner Job per fire, as its CronJob (`khrun sync`) would make it. */
export interface FiredCheck {
  namespace: string;
  name: string;
  kind: KindName;
  timeoutMs: number;
  /** When in each interval this check fires (CronJobs of different checks fire at different moments). */
  offsetMs: number;
}

export interface Fire {
  check: string;
  /** When the Job was sent (this machine's clock, which the API server shares). */
  atMs: number;
  job: string;
}

/**
 * Jobs kept until the section removes them: each runner's log holds its peak RSS. The rest is the tick's
 * and sync's Job (run-job.ts).
 */
const OPTIONS: RunJobOptions = {
  deadlineMarginSeconds: 120,
  finishedJobTtl: { minSeconds: 3_600, maxSeconds: 3_600 },
};

const done = (j: V1Job) => (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0;

/**
 * Fires every check on the interval from startMs + its offset, as a CronJob with concurrencyPolicy Forbid
 * would: a runner Job from the runner PodTemplate (the one the tick and sync copy), skipped while the
 * check's last Job is still active. Stops at stop(), which resolves once every Job it made has ended
 * (bounded by timeoutMs; the rest are left to the caller's cleanup).
 */
export function fireOnInterval(opts: {
  kc: KubeConfig;
  template: Parameters<typeof runJob>[0];
  checks: readonly FiredCheck[];
  intervalMs: number;
  startMs: number;
  jobNamespace: string;
  log: (line: string) => void;
}) {
  const batch = opts.kc.makeApiClient(BatchV1Api);
  const abort = new AbortController();
  const fires: Fire[] = [];
  const skipped: Record<string, number> = {};
  const jobs: string[] = [];
  const isActive = async (name: string | undefined) =>
    name !== undefined &&
    !done(await batch.readNamespacedJob({ name, namespace: opts.jobNamespace }).catch(() => ({}) as V1Job));
  const loops = opts.checks.map(async (check) => {
    const ref = `${check.namespace}/${check.name}`;
    let last: string | undefined;
    for (let k = 0; !abort.signal.aborted; k++) {
      const at = opts.startMs + check.offsetMs + k * opts.intervalMs;
      const wait = at - Date.now();
      if (wait > 0) await sleep(wait, undefined, { signal: abort.signal }).catch(() => undefined);
      if (abort.signal.aborted) return;
      if (await isActive(last)) {
        skipped[ref] = (skipped[ref] ?? 0) + 1;
        continue;
      }
      const job = runJob(
        opts.template,
        {
          namespace: check.namespace,
          name: check.name,
          timeoutMs: check.timeoutMs,
          runIntervalMs: opts.intervalMs,
          kind: check.kind,
        },
        OPTIONS,
        { namespace: opts.jobNamespace, generateName: 'khb-run-' },
      );
      job.metadata = { ...job.metadata, labels: { ...job.metadata?.labels, [BENCH_JOB_LABEL]: 'true' } };
      const podMeta = job.spec?.template.metadata;
      if (podMeta) podMeta.labels = { ...podMeta.labels, [BENCH_JOB_LABEL]: 'true' };
      const atMs = Date.now();
      try {
        const created = await batch.createNamespacedJob({ namespace: opts.jobNamespace, body: job });
        last = created.metadata?.name ?? '';
        jobs.push(last);
        fires.push({ check: ref, atMs, job: last });
      } catch (error) {
        opts.log(`    fire of ${ref} failed: ${(error as Error).message}`);
      }
    }
  });
  return {
    fires: () => [...fires],
    skipped: () => ({ ...skipped }),
    /** Stops firing and waits until every Job made has ended, up to timeoutMs. */
    async stop(timeoutMs: number): Promise<void> {
      abort.abort();
      await Promise.all(loops);
      const deadline = Date.now() + timeoutMs;
      for (const name of jobs) while ((await isActive(name)) && Date.now() < deadline) await sleep(500);
    },
  };
}

/** The runner pods of the section's Jobs: namespace/name, for their logs. */
export async function benchRunnerPods(kc: KubeConfig, jobNamespace: string): Promise<string[]> {
  const pods = await kc
    .makeApiClient(CoreV1Api)
    .listNamespacedPod({ namespace: jobNamespace, labelSelector: BENCH_JOB_LABEL });
  return pods.items.map((p) => p.metadata?.name ?? '').filter(Boolean);
}

/** Removes the section's Jobs and their pods. */
export async function removeBenchJobs(kc: KubeConfig, jobNamespace: string): Promise<void> {
  await kc.makeApiClient(BatchV1Api).deleteCollectionNamespacedJob({
    namespace: jobNamespace,
    labelSelector: BENCH_JOB_LABEL,
    propagationPolicy: 'Background',
  });
}
