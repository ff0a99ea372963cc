import type { KubeConfig } from '@kubernetes/client-node';
import { KHJOB_PLURAL, type KhJob } from '../job/khjob.ts';
import { isNotFound } from '../kube/errors.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { listInScope } from './tick-kube.ts';

/**
 * The khjobs in scope, for the tick. A cluster without the khjob CRD (installed before khrun shipped it)
 * has none: its 404 is an empty list, so the tick goes on with its khchecks.
 */
export async function listKhJobs(kc: KubeConfig, scope: NamespaceScope): Promise<KhJob[]> {
  try {
    return await listInScope<KhJob>(kc, KHJOB_PLURAL, scope);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}
