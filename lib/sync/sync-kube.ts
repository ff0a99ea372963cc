import { PatchStrategy, setHeaderOptions, type V1CronJob } from '@kubernetes/client-node';
import { listHealthChecks } from '../healthcheck/list.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import { CHECK_CRONJOB_COMPONENT } from '../schedule/check-cronjob.ts';
import { listInScope } from '../schedule/list-in-scope.ts';
import { COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL } from '../schedule/run-job.ts';
import { KHCHECK_PLURAL, type KhCheck } from '../state/resources.ts';
import type { SyncKube } from './sync.ts';

export const SYNC_FIELD_MANAGER = 'khrun-sync' as const;

/** SyncKube over the API server: server-side apply under the field manager khrun-sync. */
export function syncKube(client: KubeClient): SyncKube {
  const batch = client.batch;
  const labelSelector = `${MANAGED_BY_LABEL}=${MANAGED_BY},${COMPONENT_LABEL}=${CHECK_CRONJOB_COMPONENT}`;
  const existing = new Map<string, string | undefined>();
  return {
    listChecks: (scope) => retryTransient(() => listInScope<KhCheck>(client, KHCHECK_PLURAL, scope)),
    listHealthChecks: (scope) => retryTransient(() => listHealthChecks(client, scope)),
    async listManagedCronJobs(scope) {
      const items = await retryTransient(async () =>
        scope === 'all'
          ? (await batch.listCronJobForAllNamespaces({ labelSelector })).items
          : (
              await Promise.all(
                scope.namespaces.map((namespace) =>
                  batch.listNamespacedCronJob({ namespace, labelSelector }),
                ),
              )
            ).flatMap((l) => l.items),
      );
      for (const cj of items) {
        existing.set(`${cj.metadata?.namespace}/${cj.metadata?.name}`, cj.metadata?.resourceVersion);
      }
      return items;
    },
    async applyCronJob(cronJob: V1CronJob) {
      const name = cronJob.metadata?.name ?? '';
      const namespace = cronJob.metadata?.namespace ?? '';
      const before = existing.get(`${namespace}/${name}`);
      const applied = await batch.patchNamespacedCronJob(
        { name, namespace, body: cronJob, fieldManager: SYNC_FIELD_MANAGER, force: true },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      );
      if (before === undefined) return 'created';
      return applied.metadata?.resourceVersion === before ? 'unchanged' : 'configured';
    },
    async deleteCronJob(namespace, name) {
      try {
        await batch.deleteNamespacedCronJob({ name, namespace, propagationPolicy: 'Background' });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
  };
}
