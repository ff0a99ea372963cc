import { type KhStateStore, updateKhStateWithRetry } from '../kube/cas.ts';
import { readDispatchClaim, withDispatchClaim, withoutDispatchClaim } from '../state/dispatch-claim.ts';
import { newKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import type { ClaimStore } from './claim-store.ts';

/**
 * The dispatch claim of a khcheck or khjob: the khrun.dev/dispatched annotation of its khstate, written
 * with updateKhStateWithRetry (a claim on a missing khstate creates it).
 */
export function khStateClaims(
  store: KhStateStore,
  ref: { namespace: string; name: string },
): ClaimStore<KhState> {
  return {
    update: (loop) => updateKhStateWithRetry(store, ref, loop),
    claimOf: (state) => readDispatchClaim(state),
    withClaim: (state, claim) => {
      const base = state ?? newKhState(ref.name, ref.namespace);
      return claim ? withDispatchClaim(base, claim) : withoutDispatchClaim(base);
    },
  };
}
