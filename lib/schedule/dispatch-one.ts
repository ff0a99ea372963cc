import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, type KhStateStore, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type DispatchClaim, withDispatchClaim } from '../state/dispatch-claim.ts';
import { newKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import type { Dispatcher } from './dispatcher.ts';
import type { DueDecision } from './due.ts';
import { releaseClaim } from './release-claim.ts';
import type { CheckRef } from './run-job.ts';
import type { TickEntry } from './tick-entry.ts';

/**
 * One due object (a khjob, a HealthCheck) dispatched as a khcheck is: the dispatch claim written first with a
 * compare-and-swap on the object's state (its khstate, or the HealthCheck's state view), starting from the
 * listed one; after a conflict it re-reads, and a claim another tick wrote makes it not due. A dispatch that
 * fails gives its claim back. `label` names the object in the tick's entries.
 */
export async function claimAndDispatch(
  deps: { store: KhStateStore; dispatcher: Dispatcher; clock: Clock; log: Log },
  c: {
    target: CheckRef;
    label: string;
    first: DueDecision;
    listed: KhState | null;
    decide: (state: KhState | null) => DueDecision | undefined | Promise<DueDecision | undefined>;
    identity: string;
    maxAttempts: number;
  },
): Promise<TickEntry> {
  const { namespace, name } = c.target;
  let claim: DispatchClaim | undefined;
  try {
    claim = await updateKhStateWithRetry<DispatchClaim | undefined>(deps.store, c.target, {
      writer: 'dispatch',
      maxAttempts: c.maxAttempts,
      log: deps.log,
      initial: c.listed,
      decide: async (state) => {
        if (!(await c.decide(state))?.due) return done(undefined);
        const nowMs = deps.clock.nowMs();
        const next: DispatchClaim = {
          atMs: nowMs,
          ref: deps.dispatcher.refFor(c.target, nowMs),
          by: c.identity,
        };
        return write(withDispatchClaim(state ?? newKhState(name, namespace), next), () => next);
      },
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
  }
  if (!claim) return { check: c.label, decision: c.first, result: 'lost' };
  try {
    await deps.dispatcher.dispatch(c.target, claim.ref);
    deps.log.info('dispatched', { check: c.label, ref: claim.ref, reason: c.first.reason });
    return { check: c.label, decision: c.first, result: 'dispatched', ref: claim.ref };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    deps.log.error('dispatch failed', { check: c.label, ref: claim.ref, error: message });
    await releaseClaim(deps.store, namespace, name, claim).catch(() => undefined);
    return { check: c.label, decision: c.first, result: 'failed', ref: claim.ref, error: message };
  }
}
