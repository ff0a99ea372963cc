import { type ActiveRun, readActiveRun, readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { JobPhase, jobRunUuid, type KhJob, phaseOf } from './khjob.ts';

/** Marks a `Running` phase khrun wrote, with the runner that wrote it (v2's Running carries no such mark). */
export const JOB_RUNNER_ANNOTATION = 'khrun.dev/job-runner' as const;

/** What an invocation does about a khjob, decided from the khjob and its khstate alone. */
export type JobStep =
  /** Its run is recorded (or v2 completed it): nothing to run; the phase is made Completed if it is not. */
  | { kind: 'ran' }
  /** Its run is past its deadline and its runner is gone: record the run's end, never start another. */
  | { kind: 'close-stale'; run: ActiveRun }
  /** Running under something that is not khrun (Kuberhealthy v2): left alone. */
  | { kind: 'foreign' }
  /** Run it: claim its run, adopt it from a killed runner, or find it live elsewhere (the engine decides). */
  | { kind: 'run' };

/**
 * One khjob, one run: the run is named by the khjob (jobRunUuid), so its khstate says whether that run
 * was recorded, is live, or was left behind by a killed runner. Pure.
 */
export function decideJobStep(job: KhJob, state: KhState | null, nowMs: number): JobStep {
  const runUuid = jobRunUuid(job);
  const phase = phaseOf(job);
  if (readLastOutcome(state)?.uuid === runUuid || phase === JobPhase.Completed) return { kind: 'ran' };
  const run = readActiveRun(state);
  if (run?.uuid === runUuid) return nowMs >= run.deadlineMs ? { kind: 'close-stale', run } : { kind: 'run' };
  if (phase === JobPhase.Running && !job.metadata.annotations?.[JOB_RUNNER_ANNOTATION])
    return { kind: 'foreign' };
  return { kind: 'run' };
}
