import type { HealthCheck } from '../healthcheck/resources.ts';
import { updateWithRetry } from '../kube/cas.ts';
import { ANNOTATION, type DispatchClaim, readDispatchClaim } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import type { ClaimStore } from './claim-store.ts';
import type { HealthCheckWrites } from './tick-port.ts';

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
