import type { CoreV1Api } from '@kubernetes/client-node';
import { statusCodeOf } from './errors.ts';

/** What a pod removal came to; `kept` says why the pod is still there and who will deal with it. */
export type PodRemoval =
  | { kind: 'deleted' }
  | { kind: 'gone' }
  | { kind: 'kept'; status: number; why: string };

/** What a refused or failed delete means: the pod is gone, is still there (and why), or the error is not ours. */
export type AfterDeleteError =
  | { kind: 'gone' }
  | { kind: 'kept'; status: number; why: string }
  | { kind: 'rethrow' };

/**
 * Decides, from the status code alone, what a failed pod delete means. A 404 is a pod already gone (the pods
 * path is always served): success. With a uid precondition, a 409 means the name now belongs to another pod,
 * so ours is gone too. A 403 (RBAC, or policy 3 of infra/deploy/admission.yaml: not a checker pod khrun
 * made) and a 429 (the API server's flow control) keep the pod: the next clean-up of its check retries, or
 * its run's deadline passes. Anything else (a 5xx, no answer) is rethrown for the caller. Pure.
 */
export function afterDeleteError(error: unknown, opts: { uidPrecondition: boolean }): AfterDeleteError {
  const status = statusCodeOf(error);
  switch (status) {
    case 404:
      return { kind: 'gone' };
    case 409:
      return opts.uidPrecondition
        ? { kind: 'gone' }
        : { kind: 'kept', status, why: 'the pod changed during the delete; the next clean-up retries' };
    case 403:
      return {
        kind: 'kept',
        status,
        why: 'the delete is forbidden (RBAC, or an admission policy: not a checker pod khrun made)',
      };
    case 429:
      return {
        kind: 'kept',
        status,
        why: 'the API server refused the delete for now (429); the next clean-up retries',
      };
    default:
      return { kind: 'rethrow' };
  }
}

/**
 * Removes a checker pod by a graceful DELETE, never by an eviction. Contract:
 *
 * - Why delete. The API server admits a DELETE with the pod itself as oldObject, so policy 3
 *   (khrun-runner-pod-removal) holds khrun's identities to the checker pods khrun made. An Eviction names
 *   only the pod: no admission policy sees the pod it would remove, and the API server deletes the evicted
 *   pod without admitting that deletion, so a token that may evict can remove any pod in its reach. khrun's
 *   roles therefore hold no `pods/eviction` at all.
 * - Why not honour disruption budgets. A budget keeps enough replicas of a workload through voluntary
 *   disruptions (drains, upgrades); a checker pod is one run of one check, no budget is meant to select it,
 *   and removing it ends that run's own life, which is no disruption of anything.
 * - Graceful. No gracePeriodSeconds is sent, so the pod's own terminationGracePeriodSeconds applies (as it
 *   did for an eviction): its containers get SIGTERM and that long before SIGKILL.
 * - With uid, only that very pod: a pod of the same name created since (a replacement) is left alone.
 * - A pod already gone (404, or with uid a 409) is `gone`, a success. A 403 or 429 is `kept`, for the caller
 *   to log and a later clean-up to retry; one request, no retry here.
 */
export async function deletePodGracefully(
  core: CoreV1Api,
  namespace: string,
  name: string,
  uid?: string,
): Promise<PodRemoval> {
  try {
    await core.deleteNamespacedPod({ name, namespace, ...(uid ? { body: { preconditions: { uid } } } : {}) });
    return { kind: 'deleted' };
  } catch (error) {
    const next = afterDeleteError(error, { uidPrecondition: uid !== undefined });
    if (next.kind === 'rethrow') throw error;
    return next;
  }
}
