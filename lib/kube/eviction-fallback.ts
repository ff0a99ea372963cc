import { ApiException } from '@kubernetes/client-node';
import { statusCodeOf } from './errors.ts';

/** What a pod removal came to; `kept` says why the pod is still there and who will deal with it. */
export type PodRemoval =
  | { kind: 'evicted' }
  | { kind: 'deleted'; why: string }
  | { kind: 'gone' }
  | { kind: 'kept'; status: number; why: string };

/** The next step after an eviction request failed. */
export type AfterEvictionError =
  | { kind: 'gone' }
  | { kind: 'delete'; why: string }
  | { kind: 'kept'; status: number; why: string }
  | { kind: 'rethrow' };

/** The `details` of a v1.Status body: which object a 404 is about, when the API server names one. */
function statusDetails(error: unknown): { kind?: string; name?: string } | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const body: unknown = error.body;
  try {
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as {
      details?: { kind?: unknown; name?: unknown };
    } | null;
    const d = parsed?.details;
    if (!d) return undefined;
    return {
      ...(typeof d.kind === 'string' ? { kind: d.kind } : {}),
      ...(typeof d.name === 'string' ? { name: d.name } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * Decides, from the status code (and for a 404, which object the Status names), what a failed eviction
 * means. Eviction honours disruption budgets and is what a removal should be; deleting instead is right only
 * where the API server does not serve eviction (a 404 that is not about the pod, a 405 or 501). A 429 (a
 * disruption budget, or the API server's flow control) and a 403 (RBAC or an admission policy) keep the pod:
 * deleting it anyway would override exactly the rule that refused. The pod then stays until the next clean-up
 * of its check retries, or its run's deadline passes. With a uid precondition, a 409 means the name now
 * belongs to another pod, so ours is gone; without one, it is a conflict worth a later retry. Pure.
 */
export function afterEvictionError(
  error: unknown,
  opts: { pod: string; uidPrecondition: boolean },
): AfterEvictionError {
  const status = statusCodeOf(error);
  switch (status) {
    case 404: {
      const details = statusDetails(error);
      if (details?.kind === 'pods' || details?.name === opts.pod) return { kind: 'gone' };
      return { kind: 'delete', why: 'the API server does not serve pod eviction (404)' };
    }
    case 405:
    case 501:
      return { kind: 'delete', why: `the API server does not serve pod eviction (${status})` };
    case 409:
      return opts.uidPrecondition
        ? { kind: 'gone' }
        : { kind: 'kept', status, why: 'the pod changed during the eviction; the next clean-up retries' };
    case 429:
      return {
        kind: 'kept',
        status,
        why: 'a disruption budget (or the API server) does not allow the eviction now; not deleted instead',
      };
    case 403:
      return {
        kind: 'kept',
        status,
        why: 'eviction is forbidden (RBAC or an admission policy); not deleted instead',
      };
    default:
      return { kind: 'rethrow' };
  }
}
