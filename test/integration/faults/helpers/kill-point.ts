import { readAcceptedReport, readActiveRun } from '../../../../lib/state/khstate.ts';
import type { KhState } from '../../../../lib/state/resources.ts';
import { recordedOutcomes } from './invariants.ts';

/** One random kill as the test saw it: whether the signal went out, how the runner ended, what it left. */
export interface KillAttempt {
  /** ChildProcess.kill returned true: the runner was still there to be signalled. */
  signalSent: boolean;
  /** The signal the runner died of (null: it exited by itself). */
  exitSignal: string | null;
  /** The khstate before the runner started, and once it was dead (nothing of it writes any more). */
  before: KhState | null;
  after: KhState | null;
  /** Whether a pod of the run the khstate holds active existed once the runner was dead. */
  runPodExists: boolean;
}

/** Where a kill landed, read from what the dead runner left behind. */
export const KILL_POINTS = {
  notSent: 'no kill: the runner had exited before the timer fired',
  exitedFirst: 'no kill: the runner exited by itself',
  recorded: 'killed after the outcome was written',
  beforeClaim: 'killed before the claim',
  claimed: 'killed with the run claimed, no pod yet',
  podCreated: 'killed with the pod created, no report yet',
  reportStored: 'killed with the report stored, the outcome not yet written',
} as const;
export type KillPoint = (typeof KILL_POINTS)[keyof typeof KILL_POINTS];

/** The kills that left a live run behind for the next invocation: the ones the scenario is about. */
const LIVE: ReadonlySet<KillPoint> = new Set([
  KILL_POINTS.claimed,
  KILL_POINTS.podCreated,
  KILL_POINTS.reportStored,
]);

export function killPoint(a: KillAttempt): KillPoint {
  if (!a.signalSent) return KILL_POINTS.notSent;
  if (a.exitSignal !== 'SIGKILL') return KILL_POINTS.exitedFirst;
  if (recordedOutcomes(a.after) > recordedOutcomes(a.before)) return KILL_POINTS.recorded;
  const run = readActiveRun(a.after);
  if (!run) return KILL_POINTS.beforeClaim;
  if (readAcceptedReport(a.after)?.uuid === run.uuid) return KILL_POINTS.reportStored;
  return a.runPodExists ? KILL_POINTS.podCreated : KILL_POINTS.claimed;
}

/** A kill counts when the signal was sent, the runner died of it, and its run was live then (claimed, not recorded). */
export const isLiveKill = (point: KillPoint): boolean => LIVE.has(point);
