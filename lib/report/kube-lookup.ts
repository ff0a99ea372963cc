import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { RUN_ID_LABEL } from '../check/pod-builder.ts';
import { retryWithBackoff } from '../util/backoff.ts';
import type { CallerLookup } from './identify-caller.ts';

/** Which namespaces a report endpoint serves: a runner serves its check's, a shared server may serve all. */
export type NamespaceScope = { namespaces: string[] } | 'all';

const IP_SHAPE = /^[0-9a-fA-F:.]{2,45}$/;

/**
 * CallerLookup over the API server. A pod can report before its status carries its IP (the kubelet writes
 * it asynchronously), so the IP lookup retries briefly with backoff, as v2 did for a minute.
 */
export function kubeCallerLookup(
  kc: KubeConfig,
  scope: NamespaceScope,
  opts: { ipLookupWaitMs?: number } = {},
): CallerLookup {
  const core = kc.makeApiClient(CoreV1Api);
  const list = async (selector: { labelSelector?: string; fieldSelector?: string }): Promise<V1Pod[]> => {
    if (scope === 'all') return (await core.listPodForAllNamespaces(selector)).items;
    const lists = await Promise.all(
      scope.namespaces.map((namespace) => core.listNamespacedPod({ namespace, ...selector })),
    );
    return lists.flatMap((l) => l.items);
  };
  const live = (p: V1Pod) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
  return {
    podsByRunId: (uuid) => list({ labelSelector: `${RUN_ID_LABEL}=${uuid}` }),
    async livePodsByIp(ip) {
      if (!IP_SHAPE.test(ip)) return [];
      const waitMs = opts.ipLookupWaitMs ?? 10_000;
      try {
        return await retryWithBackoff(
          `a pod with IP ${ip}`,
          async () => {
            const pods = (await list({ fieldSelector: `status.podIP=${ip}` })).filter(live);
            return pods.length > 0 ? pods : undefined;
          },
          { initialMs: 100, maxMs: 1_000, deadlineEpochMs: Date.now() + waitMs },
        );
      } catch {
        return [];
      }
    },
  };
}
