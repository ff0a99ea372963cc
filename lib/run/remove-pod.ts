import type { V1Pod } from '@kubernetes/client-node';
import { isRunPod } from '../check/run-label.ts';
import type { Log } from '../core/log.ts';
import type { PodRemoval } from '../kube/pod-removal.ts';
import type { KubePort } from '../kube/port.ts';

/**
 * Removes one checker pod through the port (a graceful delete, never an eviction: lib/kube/pod-removal.ts
 * says why) and logs a pod that stays: a refused delete (403, 429) is left to the next clean-up of its check
 * (or its own end). A pod already gone is a success.
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
  return removal;
}

/**
 * Removes each pod by its uid (a pod that only shares a name is never hit), one after the other. Call it
 * only for pods of a run whose closing write landed: that write is the fence that makes them ours.
 */
export async function removePodsByUid(
  deps: { kube: KubePort; log: Log },
  namespace: string,
  pods: readonly V1Pod[],
): Promise<void> {
  for (const pod of pods)
    await removeCheckerPod(deps, namespace, pod.metadata?.name ?? '', pod.metadata?.uid);
}

/**
 * Lists the check's pods and removes every pod of the run, each by its uid. Call it only for a run this
 * invocation closed itself (after its outcome was written): the write that closed it is the fence, so no
 * other invocation holds the run any more.
 */
export async function removeRunPods(
  deps: { kube: KubePort; log: Log },
  check: { namespace: string; name: string },
  runUuid: string,
): Promise<void> {
  const pods = await deps.kube.listCheckPods(check.namespace, check.name);
  await removePodsByUid(
    deps,
    check.namespace,
    pods.filter((p) => isRunPod(p, runUuid)),
  );
}
