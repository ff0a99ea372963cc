import { done, RetriesExhausted, write } from '../kube/cas.ts';
import type { DispatchClaim } from '../state/dispatch-claim.ts';
import type { ClaimStore } from './claim-store.ts';

/**
 * Gives a claim back, only if it is still ours (the same ref and time: another tick may have claimed
 * since), reading the object first. A release that keeps conflicting is given up; other errors are thrown.
 */
export async function releaseClaim<S>(store: ClaimStore<S>, claim: DispatchClaim): Promise<void> {
  try {
    await store.update<void>({
      writer: 'dispatch-release',
      maxAttempts: 3,
      decide: (current) => {
        const held = store.claimOf(current);
        if (!current || held?.ref !== claim.ref || held.atMs !== claim.atMs) return done(undefined);
        return write(store.withClaim(current, undefined), () => undefined);
      },
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
  }
}
