import { done, type KhStateStore, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type DispatchClaim, readDispatchClaim, withoutDispatchClaim } from '../state/dispatch-claim.ts';

/** Gives a claim back, only if it is still ours (another tick may have claimed since). Best effort. */
export async function releaseClaim(
  kube: KhStateStore,
  namespace: string,
  name: string,
  claim: DispatchClaim,
) {
  try {
    await updateKhStateWithRetry<void>(
      kube,
      { namespace, name },
      {
        writer: 'dispatch-release',
        maxAttempts: 3,
        decide: (state) => {
          const current = readDispatchClaim(state);
          if (!state || current?.ref !== claim.ref || current.atMs !== claim.atMs) return done(undefined);
          return write(withoutDispatchClaim(state), () => undefined);
        },
      },
    );
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
  }
}
