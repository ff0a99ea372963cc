import { type ActiveRun, readActiveRun } from './khstate.ts';
import type { KhState } from './resources.ts';

/**
 * Whose the run is, read from the khstate: the fencing check of every write a runner makes on its run's
 * behalf (lease renewal, outcome, release, pod removal). Decided inside the same compare-and-swap as the
 * write it guards, so the check and the write are one: the resourceVersion precondition fails the write if
 * anyone changed the khstate in between.
 */
export type Holding =
  /** The active run is this run, held by this invocation. */
  | { kind: 'held'; active: ActiveRun; state: KhState }
  /** The run is no longer active: recorded, closed as stale, or the khstate is gone. */
  | { kind: 'closed' }
  /** The run is still active, but another invocation adopted it (after this one's lease lapsed). */
  | { kind: 'taken'; by: string };

/** The fencing identity of a run's holder: its invocation token, or the runner name for older claims. */
export function holderOf(run: ActiveRun): string {
  return run.holder ?? run.runner;
}

/** Whether ours (the run as this invocation claimed, adopted or last renewed it) is still held by us. */
export function holdingOf(state: KhState | null, ours: ActiveRun): Holding {
  const active = readActiveRun(state);
  if (!state || !active || active.uuid !== ours.uuid) return { kind: 'closed' };
  if (holderOf(active) !== holderOf(ours)) return { kind: 'taken', by: active.runner };
  return { kind: 'held', active, state };
}

/** Why a runner stepped down, in the words its result and log use. */
export function supersededReason(holding: Exclude<Holding, { kind: 'held' }>): string {
  return holding.kind === 'closed'
    ? 'the run was closed by another invocation'
    : `the run was taken over by runner ${holding.by} after this runner's lease lapsed`;
}
