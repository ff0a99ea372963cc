import type { Log } from '../core/log.ts';
import type { PodRemoval } from '../kube/eviction-fallback.ts';
import type { KubePort } from '../kube/port.ts';

/**
 * Removes one checker pod through the port (eviction; delete only where eviction is not served) and logs
 * a pod that stays: a disruption budget's 429 or a forbidden eviction is not overridden, so the pod is
 * left to the next clean-up of its check (or its own end).
 */
export async function removeCheckerPod(
  deps: { kube: KubePort; log: Log },
  namespace: string,
  name: string,
  uid?: string,
): Promise<PodRemoval> {
  const removal = await deps.kube.removePod(namespace, name, uid);
  if (removal.kind === 'kept')
    deps.log.warn('checker pod left in place', { pod: name, status: removal.status, why: removal.why });
  else if (removal.kind === 'deleted') deps.log.info('checker pod deleted', { pod: name, why: removal.why });
  return removal;
}
