import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, type KhStateStore, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type DispatchClaim, readDispatchClaim, withDispatchClaim } from '../state/dispatch-claim.ts';
import { newKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import type { DueDecision } from './due.ts';

export type ClaimResult =
  | { kind: 'claimed'; claim: DispatchClaim; decision: DueDecision }
  | { kind: 'lost'; decision: DueDecision; ref?: string };

/**
 * Takes a khcheck's dispatch claim with a compare-and-swap on its khstate, starting from the listed khstate
 * (no read before the first write); after a conflict it re-reads, and the claim another tick wrote makes the
 * check not due ('lost', with that claim's ref). refAt names the invocation the claim records, before it is
 * sent: a single run's name is made at the claim's time, a batch's was made before its claims.
 */
export async function claimCheck(
  deps: { kube: KhStateStore; clock: Clock; log: Log },
  c: {
    namespace: string;
    name: string;
    listed: KhState | null;
    decide: (state: KhState | null) => DueDecision;
    refAt: (nowMs: number) => string;
    maxAttempts: number;
    identity: string;
  },
): Promise<ClaimResult> {
  try {
    return await updateKhStateWithRetry<ClaimResult>(deps.kube, c, {
      writer: 'dispatch',
      maxAttempts: c.maxAttempts,
      log: deps.log,
      initial: c.listed,
      decide: (state) => {
        const decision = c.decide(state);
        if (!decision.due) return done({ kind: 'lost', decision, ref: readDispatchClaim(state)?.ref });
        const nowMs = deps.clock.nowMs();
        const claim: DispatchClaim = { atMs: nowMs, ref: c.refAt(nowMs), by: c.identity };
        const base = state ?? newKhState(c.name, c.namespace);
        return write(withDispatchClaim(base, claim), () => ({ kind: 'claimed', claim, decision }));
      },
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
    deps.log.warn('dispatch claim kept conflicting; left for the next tick', {
      check: `${c.namespace}/${c.name}`,
    });
    return { kind: 'lost', decision: c.decide(c.listed) };
  }
}
