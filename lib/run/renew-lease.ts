import type { Clock } from '../core/clock.ts';
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

/**
 * One renewal of the run's lease: reads the khstate and, while its active run is still this one, writes it
 * back held by runner until now + leaseMs (never past the deadline). Throws WriteConflict when another write
 * landed between the read and the write (a report, most likely): the caller reads again. The write says
 * 'lease' as its writer (user agent khrun/lease), so the audit log attributes it.
 */
export async function renewLease(
  deps: { kube: KubePort; clock: Clock },
  target: { namespace: string; checkName: string; run: ActiveRun },
  opts: { runner: string; leaseMs: number },
): Promise<LeaseRenewal> {
  const { kube, clock } = deps;
  const current = await kube.readState(target.namespace, target.checkName);
  const active = readActiveRun(current);
  if (!current || active?.uuid !== target.run.uuid) return { kind: 'not-ours', state: current };
  const renewed: ActiveRun = {
    ...active,
    runner: opts.runner,
    leaseUntilMs: leaseUntil(clock.nowMs(), opts.leaseMs, target.run.deadlineMs),
  };
  return { kind: 'renewed', state: await kube.replaceState(claimRun(current, renewed), 'lease') };
}
