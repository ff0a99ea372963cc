import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { isRunPod, runIdOf } from '../check/run-label.ts';
import { ApiErrorKind, classifyApiError, isUnreachable } from './errors.ts';
import { isTooManyRequests, isTransient, retryTransient, THROTTLED_MS } from './transient.ts';

/**
 * Creates a checker pod by its name, and tries again while the API server is overloaded (a 429 or a 5xx: many
 * checks starting at once can overload a small control plane into answering 504) or its connection failed
 * (reset, or timed out: at 1,000 checks due at once a create's socket read timed out, and without another
 * try that check's run ended with no pod). A 5xx or a failed connection leaves it open whether the pod was
 * made, so when a later try finds the name taken, the pod holding it is read: if it carries this pod's run
 * label it is the one the unanswered try made, and is returned as created; anything else is the
 * AlreadyExists it is. Bounded: 30 s and at least three tries after a 5xx or a failed connection, five
 * minutes while the API server answers 429.
 */
export async function createPodOnce(core: CoreV1Api, pod: V1Pod): Promise<V1Pod> {
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  let unanswered = false;
  return retryTransient(
    async () => {
      try {
        return await core.createNamespacedPod({ namespace, body: pod });
      } catch (error) {
        if (unanswered && classifyApiError(error) === ApiErrorKind.AlreadyExists) {
          const made = await madeByUs(core, pod);
          if (made) return made;
        }
        if ((isTransient(error) && !isTooManyRequests(error)) || isUnreachable(error)) unanswered = true;
        throw error;
      }
    },
    {
      totalMs: 30_000,
      throttledMs: THROTTLED_MS,
      minAttempts: 3,
      retryOn: (error) => isTransient(error) || isUnreachable(error),
    },
  );

  async function madeByUs(core: CoreV1Api, wanted: V1Pod): Promise<V1Pod | undefined> {
    // A list by name: the runner may list and watch pods, not get them (infra/deploy's RBAC).
    const found = await core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` });
    const run = runIdOf(wanted);
    return found.items.find((p) => run !== undefined && isRunPod(p, run));
  }
}
