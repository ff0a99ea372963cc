import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { KubePort } from '../kube/port.ts';
import { type ActiveRun, readActiveRun } from '../state/khstate.ts';
import { claimRun } from '../state/record.ts';
import type { KhState } from '../state/resources.ts';
import { leaseUntil } from './claim.ts';

export type LeaseRenewal =
  /** The lease was extended; state is the khstate as stored by that write. */
  | { kind: 'renewed'; state: KhState }
  /** The khstate's active run is no longer this one (or the khstate is gone); nothing was written. */
  | { kind: 'not-ours'; state: KhState | null };

/** Conflicts one renewal absorbs before it fails (and the lease keeper retries it). */
export const LEASE_MAX_ATTEMPTS = 8;

/**
 * One renewal of the run's lease, as a compare-and-swap loop: while the khstate's active run is still this
 * one, writes it back held by runner until now + leaseMs (never past the deadline); a conflict (a report,
 * most likely) reads again. The writer is 'lease' (user agent khrun/lease), so the audit log attributes
 * it. Throws RetriesExhausted after LEASE_MAX_ATTEMPTS conflicts in a row.
 */
export function renewLease(
  deps: { kube: KubePort; clock: Clock; log?: Log },
  target: { namespace: string; checkName: string; run: ActiveRun },
  opts: { runner: string; leaseMs: number },
): Promise<LeaseRenewal> {
  return updateKhStateWithRetry<LeaseRenewal>(
    deps.kube,
    { namespace: target.namespace, name: target.checkName },
    {
      writer: 'lease',
      maxAttempts: LEASE_MAX_ATTEMPTS,
      log: deps.log,
      decide: (current) => {
        const active = readActiveRun(current);
        if (!current || active?.uuid !== target.run.uuid) return done({ kind: 'not-ours', state: current });
        const renewed: ActiveRun = {
          ...active,
          runner: opts.runner,
          leaseUntilMs: leaseUntil(deps.clock.nowMs(), opts.leaseMs, target.run.deadlineMs),
        };
        return write(claimRun(current, renewed), (state) => ({ kind: 'renewed', state }));
      },
    },
  );
}
