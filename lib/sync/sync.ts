import type { V1CronJob, V1PodTemplateSpec } from '@kubernetes/client-node';
import type { Log } from '../core/log.ts';
import { healthCheckCronJob } from '../healthcheck/cronjob.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { checkCronJob } from '../schedule/check-cronjob.ts';
import type { RunJobOptions } from '../schedule/run-job.ts';
import type { KhCheck } from '../state/resources.ts';

/** What sync needs from the API server; the real one is sync-kube.ts. */
export interface SyncKube {
  listChecks(scope: NamespaceScope): Promise<KhCheck[]>;
  /** Kuberhealthy v3 HealthChecks in scope ([] without v3's CRD); absent: sync makes none for them. */
  listHealthChecks?(scope: NamespaceScope): Promise<HealthCheck[]>;
  /** The CronJobs sync made earlier (managed-by khrun, component check-cronjob) in the scope. */
  listManagedCronJobs(scope: NamespaceScope): Promise<V1CronJob[]>;
  /** Server-side apply; says whether the object was created, changed or already as desired. */
  applyCronJob(cronJob: V1CronJob): Promise<'created' | 'configured' | 'unchanged'>;
  deleteCronJob(namespace: string, name: string): Promise<void>;
}

export type SyncAction =
  | { kind: 'apply'; cronJob: V1CronJob; note?: string }
  | { kind: 'delete'; namespace: string; name: string; check: string };

export type SyncResult = SyncAction & {
  outcome?: 'created' | 'configured' | 'unchanged' | 'deleted' | 'would';
};

const key = (namespace: string | undefined, name: string | undefined) => `${namespace ?? ''}/${name ?? ''}`;

/**
 * Decides the CronJobs that should exist (pure): one per khcheck and one per Kuberhealthy v3 HealthCheck,
 * and the deletion of every managed CronJob whose khcheck or HealthCheck is gone.
 */
export function planSync(
  checks: KhCheck[],
  existing: V1CronJob[],
  template: V1PodTemplateSpec,
  opts: RunJobOptions,
  healthChecks: readonly HealthCheck[] = [],
): SyncAction[] {
  const actions: SyncAction[] = [];
  const wanted = new Set<string>();
  const byKey = <T extends { metadata: { namespace: string; name: string } }>(items: readonly T[]) =>
    [...items].sort((a, b) =>
      key(a.metadata.namespace, a.metadata.name).localeCompare(key(b.metadata.namespace, b.metadata.name)),
    );
  const made = [
    ...byKey(checks).map((check) => checkCronJob(check, template, opts)),
    ...byKey(healthChecks).map((hc) => healthCheckCronJob(hc, template, opts)),
  ];
  for (const { cronJob, choice, problem } of made) {
    wanted.add(key(cronJob.metadata?.namespace, cronJob.metadata?.name));
    const notes = [
      ...(problem
        ? [`invalid khcheck (${problem}); scheduled at v2's defaults so its runner records why`]
        : []),
      ...(choice.note ? [choice.note] : []),
    ];
    actions.push({ kind: 'apply', cronJob, ...(notes.length ? { note: notes.join('; ') } : {}) });
  }
  for (const cj of existing) {
    if (wanted.has(key(cj.metadata?.namespace, cj.metadata?.name))) continue;
    const annotations = cj.metadata?.annotations ?? {};
    const check = key(annotations['khrun.dev/check-namespace'], annotations['khrun.dev/check-name']);
    actions.push({
      kind: 'delete',
      namespace: cj.metadata?.namespace ?? '',
      name: cj.metadata?.name ?? '',
      check,
    });
  }
  return actions;
}

/** Applies a plan (or, with dryRun, only reports it). */
export async function runSync(
  deps: { kube: SyncKube; log: Log },
  cfg: { scope: NamespaceScope; template: V1PodTemplateSpec; jobOptions: RunJobOptions; dryRun: boolean },
): Promise<SyncResult[]> {
  const [checks, existing, healthChecks] = await Promise.all([
    deps.kube.listChecks(cfg.scope),
    deps.kube.listManagedCronJobs(cfg.scope),
    deps.kube.listHealthChecks ? deps.kube.listHealthChecks(cfg.scope) : [],
  ]);
  const plan = planSync(checks, existing, cfg.template, cfg.jobOptions, healthChecks);
  const results: SyncResult[] = [];
  for (const action of plan) {
    if (cfg.dryRun) {
      results.push({ ...action, outcome: 'would' });
      continue;
    }
    if (action.kind === 'apply') {
      const outcome = await deps.kube.applyCronJob(action.cronJob);
      if (outcome !== 'unchanged') {
        deps.log.info(`cronjob ${outcome}`, {
          cronJob: key(action.cronJob.metadata?.namespace, action.cronJob.metadata?.name),
          schedule: action.cronJob.spec?.schedule,
        });
      }
      results.push({ ...action, outcome });
    } else {
      await deps.kube.deleteCronJob(action.namespace, action.name);
      deps.log.info('cronjob deleted: its khcheck is gone', { cronJob: key(action.namespace, action.name) });
      results.push({ ...action, outcome: 'deleted' });
    }
  }
  return results;
}
