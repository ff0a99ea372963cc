import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { listInScope } from '../schedule/list-in-scope.ts';
import { KHJOB_PLURAL, type KhJob } from './khjob.ts';

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
