import type { V1Pod } from '@kubernetes/client-node';
import { runPodsSelector } from '../check/run-label.ts';
import { retryWithBackoff } from '../core/backoff.ts';
import { isTransientApiError } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { CallerLookup } from './identify-caller.ts';

/**
 * How long a header-less report waits for its pod's IP to appear in the pod's status (the kubelet writes it
 * asynchronously; v2 waited up to a minute). Every unidentifiable request holds its connection this long.
 */
export const DEFAULT_IP_LOOKUP_WAIT_MS = 10_000;

const IP_SHAPE = /^[0-9a-fA-F:.]{2,45}$/;

/**
 * CallerLookup over the API server. A pod can report before its status carries its IP (the kubelet writes
 * it asynchronously), so the IP lookup retries briefly with backoff, as v2 did (for a minute there; a few seconds here).
 */
export function kubeCallerLookup(
  client: KubeClient,
  scope: NamespaceScope,
  opts: { ipLookupWaitMs?: number } = {},
): CallerLookup {
  const core = client.core;
  const list = async (selector: { labelSelector?: string; fieldSelector?: string }): Promise<V1Pod[]> => {
    if (scope === 'all') return (await core.listPodForAllNamespaces(selector)).items;
    const lists = await Promise.all(
      scope.namespaces.map((namespace) => core.listNamespacedPod({ namespace, ...selector })),
    );
    return lists.flatMap((l) => l.items);
  };
  const live = (p: V1Pod) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
  return {
    podsByRunId: (uuid) => list({ labelSelector: runPodsSelector(uuid) }),
    async livePodsByIp(ip, how = { wait: true }) {
      if (!IP_SHAPE.test(ip)) return [];
      const waitMs = how.wait ? (opts.ipLookupWaitMs ?? DEFAULT_IP_LOOKUP_WAIT_MS) : 0;
      // Whether the last look failed: an API server that cannot be reached is not "no such pod" (a 400,
      // which clients take as final); that error goes to the caller, and the report waits for the API.
      let failure: unknown;
      try {
        return await retryWithBackoff(
          `a pod with IP ${ip}`,
          async () => {
            try {
              const pods = (await list({ fieldSelector: `status.podIP=${ip}` })).filter(live);
              failure = undefined;
              return pods.length > 0 ? pods : undefined;
            } catch (error) {
              failure = error;
              return undefined;
            }
          },
          { initialMs: 100, maxMs: 1_000, deadlineEpochMs: Date.now() + waitMs },
        );
      } catch {
        if (failure !== undefined && isTransientApiError(failure)) throw failure;
        return [];
      }
    },
  };
}
