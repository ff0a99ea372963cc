import type { V1Pod } from '@kubernetes/client-node';
import type { KindName } from '../core/run-target.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import { checkerPodSelector, runPodsNewestFirst } from './checker-pods.ts';

/**
 * A check's checker pods, newest first, and the kind they were found as. Without a kind: a khcheck's, else
 * (none) a HealthCheck's of that name, as `khrun describe` looks for a check.
 */
export async function findRunPods(
  client: KubeClient,
  where: { namespace: string; name: string; kind: KindName | undefined },
): Promise<{ kind: KindName; pods: V1Pod[] }> {
  const list = async (kind: KindName) => {
    const found = await retryTransient(() =>
      client.core.listNamespacedPod({
        namespace: where.namespace,
        labelSelector: checkerPodSelector(kind, where.name),
      }),
    );
    return { kind, pods: runPodsNewestFirst(found.items) };
  };
  const first = await list(where.kind ?? 'khcheck');
  if (where.kind || first.pods.length > 0) return first;
  const healthCheck = await list('healthcheck');
  return healthCheck.pods.length > 0 ? healthCheck : first;
}
