import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from '../healthcheck/resources.ts';
import { KHJOB_PLURAL, type KhJob } from '../job/khjob.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { listInScope } from '../schedule/list-in-scope.ts';

/**
 * The khjobs in scope, for the tick (one list per tick). A cluster without the khjob CRD (installed before khrun shipped it)
 * has none: its 404 is an empty list, so the tick goes on with its khchecks.
 */
export async function listKhJobs(client: KubeClient, scope: NamespaceScope): Promise<KhJob[]> {
  try {
    return await listInScope<KhJob>(client, KHJOB_PLURAL, scope);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/**
 * The Kuberhealthy v3 HealthChecks in scope, for the tick: one list per tick, as for khchecks. A cluster
 * without v3's CRD has none (404: an empty list).
 */
export async function listHealthChecks(client: KubeClient, scope: NamespaceScope): Promise<HealthCheck[]> {
  try {
    return await listInScope<HealthCheck>(client, HC_PLURAL, scope, { group: HC_GROUP, version: HC_VERSION });
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}
