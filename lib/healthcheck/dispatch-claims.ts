import { updateWithRetry } from '../kube/cas.ts';
import type { ClaimStore } from '../schedule/claim-store.ts';
import { ANNOTATION, type DispatchClaim, readDispatchClaim } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import type { HealthCheck } from './resources.ts';

/**
 * The HealthCheck requests the tick makes: read one, and replace it (its annotations; never its status,
 * which is v3's result and the runner's to write) with metadata.resourceVersion as precondition,
 * WriteConflict on 409. lib/healthcheck's HealthCheckApi has both.
 */
export interface HealthCheckWrites {
  get(namespace: string, name: string): Promise<HealthCheck | null>;
  replace(hc: HealthCheck, writer?: string): Promise<HealthCheck>;
}

/** The HealthCheck with the dispatch claim in its khrun.dev/dispatched annotation (or without it). Pure. */
export function withHealthCheckDispatch(hc: HealthCheck, claim: DispatchClaim | undefined): HealthCheck {
  const annotations = { ...hc.metadata.annotations };
  if (claim) annotations[ANNOTATION.dispatch] = JSON.stringify(claim);
  else delete annotations[ANNOTATION.dispatch];
  return { ...hc, metadata: { ...hc.metadata, annotations } };
}

/**
 * The dispatch claim of a HealthCheck: its khrun.dev/dispatched annotation, written by replacing the
 * HealthCheck (never its status) with its resourceVersion as precondition. A claim never creates one.
 */
export function healthCheckClaims(
  api: HealthCheckWrites,
  ref: { namespace: string; name: string },
): ClaimStore<HealthCheck> {
  const { namespace, name } = ref;
  return {
    update: (loop) =>
      updateWithRetry({
        ...loop,
        target: `${namespace}/${name}`,
        read: () => api.get(namespace, name),
        persist: (next) => api.replace(next, loop.writer),
      }),
    claimOf: (hc) => (hc ? readDispatchClaim({ metadata: hc.metadata } as KhState) : undefined),
    withClaim: (hc, claim) => {
      if (!hc)
        throw new Error(`HealthCheck ${namespace}/${name} is gone: a claim is written on one that exists`);
      return withHealthCheckDispatch(hc, claim);
    },
  };
}
