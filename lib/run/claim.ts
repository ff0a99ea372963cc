import { type ActiveRun, readAcceptedReport, readActiveRun } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';

/** What an invocation does about the run slot of a check, decided from the khstate alone. */
export type ClaimDecision =
  | { kind: 'claim' }
  /** Another runner holds a live run (lease and deadline both in the future): do nothing. */
  | { kind: 'busy'; run: ActiveRun }
  /** A run whose runner let go (lease expired or released) while its deadline holds: continue it. */
  | { kind: 'adopt'; run: ActiveRun }
  /** A run past its deadline that nobody recorded: close it (outcome + pod clean-up), then claim. */
  | { kind: 'close-stale'; run: ActiveRun; reported: boolean };

export function decideClaim(state: KhState | null, nowMs: number): ClaimDecision {
  const run = readActiveRun(state);
  if (!run) return { kind: 'claim' };
  if (nowMs >= run.deadlineMs) {
    const report = readAcceptedReport(state);
    return { kind: 'close-stale', run, reported: report?.uuid === run.uuid };
  }
  if (nowMs < run.leaseUntilMs) return { kind: 'busy', run };
  return { kind: 'adopt', run };
}

/**
 * The lease a runner holds on its run. It is renewed while the runner waits; a runner that is killed stops
 * renewing, so the next invocation adopts the run within leaseMs instead of waiting out the whole timeout.
 */
export function leaseUntil(nowMs: number, leaseMs: number, deadlineMs: number): number {
  return Math.min(nowMs + leaseMs, deadlineMs);
}
