import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { listInScope } from '../schedule/list-in-scope.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from './resources.ts';

/**
 * The Kuberhealthy v3 HealthChecks in scope, for the tick and sync: one list per tick, as for khchecks. A
 * cluster without v3's CRD has none (404: an empty list).
 */
export async function listHealthChecks(client: KubeClient, scope: NamespaceScope): Promise<HealthCheck[]> {
  try {
    return await listInScope<HealthCheck>(client, HC_PLURAL, scope, { group: HC_GROUP, version: HC_VERSION });
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}
