import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { KubePort } from '../kube/port.ts';
import type { ActiveRun } from '../state/khstate.ts';
import { claimRun } from '../state/record.ts';
import type { KhState } from '../state/resources.ts';
import { type Holding, holdingOf } from '../state/run-holder.ts';
import { leaseUntil } from './claim.ts';

export type LeaseRenewal =
  /** The lease was extended; state is the khstate as stored by that write. */
  | { kind: 'renewed'; state: KhState }
  /**
   * The run is no longer this invocation's: closed (or the khstate is gone), or taken over by another
   * invocation that adopted it; nothing was written.
   */
  | { kind: 'superseded'; state: KhState | null; holding: Exclude<Holding, { kind: 'held' }> };

/** Conflicts one renewal absorbs before it fails (and the lease keeper retries it). */
export const LEASE_MAX_ATTEMPTS = 8;

/**
 * One renewal of the run's lease, as a compare-and-swap loop (on the held version, so one PUT when nobody
 * wrote since): while the khstate's active run is still this
 * one AND held by this invocation (run.holder), writes it back held until now + leaseMs (never past the
 * deadline); a conflict (a report, most likely) reads again. A run another invocation adopted is never
 * taken back: that is 'superseded', and the caller steps down. The writer is 'lease' (user agent
 * khrun/lease), so the audit log attributes it. Throws RetriesExhausted after LEASE_MAX_ATTEMPTS conflicts.
 */
export function renewLease(
  deps: { kube: KubePort; clock: Clock; log?: Log },
  target: { namespace: string; checkName: string; run: ActiveRun },
  opts: {
    leaseMs: number;
    /**
     * The khstate as this runner last wrote or saw it: the renewal writes on it without a GET (its
     * resourceVersion is the precondition) and reads only after a conflict. Omit it to read first.
     */
    held?: KhState;
  },
): Promise<LeaseRenewal> {
  return updateKhStateWithRetry<LeaseRenewal>(
    deps.kube,
    { namespace: target.namespace, name: target.checkName },
    {
      writer: 'lease',
      maxAttempts: LEASE_MAX_ATTEMPTS,
      initial: opts.held,
      log: deps.log,
      decide: (current) => {
        const holding = holdingOf(current, target.run);
        if (holding.kind !== 'held') return done({ kind: 'superseded', state: current, holding });
        const renewed: ActiveRun = {
          ...holding.active,
          leaseUntilMs: leaseUntil(deps.clock.nowMs(), opts.leaseMs, target.run.deadlineMs),
        };
        return write(claimRun(holding.state, renewed), (state) => ({ kind: 'renewed', state }));
      },
    },
  );
}
