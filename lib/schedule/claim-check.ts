import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, RetriesExhausted, write } from '../kube/cas.ts';
import type { DispatchClaim } from '../state/dispatch-claim.ts';
import type { ClaimStore } from './claim-store.ts';
import type { DueDecision } from './due.ts';

export type ClaimResult =
  | { kind: 'claimed'; claim: DispatchClaim; decision: DueDecision }
  /** Not ours: the decision on the version that made it not due (none: not listed any more), its claim's ref. */
  | { kind: 'lost'; decision?: DueDecision; ref?: string };

/**
 * Takes an object's dispatch claim with a compare-and-swap in its claim store, starting from the listed
 * version (no read before the first write); after a conflict it re-reads, and the claim another tick wrote
 * makes the object not due ('lost', with that claim's ref). refAt names the invocation the claim records,
 * before it is sent: a single run's name is made at the claim's time, a batch's was made before its claims.
 * A claim that keeps conflicting for maxAttempts writes is 'lost' too; any other write error is thrown.
 */
export async function claimDispatch<S>(
  deps: { clock: Clock; log: Log },
  c: {
    store: ClaimStore<S>;
    /** targetLabel of the object, for the log. */
    label: string;
    listed: S | null;
    decide: (state: S | null) => DueDecision | undefined;
    refAt: (nowMs: number) => string;
    maxAttempts: number;
    identity: string;
  },
): Promise<ClaimResult> {
  try {
    return await c.store.update<ClaimResult>({
      writer: 'dispatch',
      maxAttempts: c.maxAttempts,
      log: deps.log,
      initial: c.listed,
      decide: (current) => {
        const decision = c.decide(current);
        if (!decision?.due) return done({ kind: 'lost', decision, ref: c.store.claimOf(current)?.ref });
        const nowMs = deps.clock.nowMs();
        const claim: DispatchClaim = { atMs: nowMs, ref: c.refAt(nowMs), by: c.identity };
        return write(c.store.withClaim(current, claim), () => ({ kind: 'claimed', claim, decision }));
      },
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
    deps.log.warn('dispatch claim kept conflicting; left for the next tick', { check: c.label });
    return { kind: 'lost', decision: c.decide(c.listed) };
  }
}
