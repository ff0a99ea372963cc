import type { Log } from '../core/log.ts';
import { done, updateWithRetry, write } from '../kube/cas.ts';
import { JOB_RUNNER_ANNOTATION } from './decide.ts';
import type { JobKube } from './job-kube.ts';
import { JobPhase, type KhJob, phaseOf } from './khjob.ts';

/**
 * The khjob with the phase a run moves it to, or undefined when there is nothing to write: the phase
 * only moves forward (new → Running → Completed), and a khjob that is another object than the run's (deleted
 * and applied again) is not touched. Running carries the runner's name, which tells khrun's Running from
 * v2's. Pure.
 */
export function nextPhase(
  current: KhJob,
  run: { uid: string; phase: typeof JobPhase.Running | typeof JobPhase.Completed; runner: string },
): KhJob | undefined {
  if (current.metadata.uid !== run.uid) return undefined;
  const phase = phaseOf(current);
  if (phase === JobPhase.Completed || phase === run.phase) return undefined;
  const annotations =
    run.phase === JobPhase.Running
      ? { ...current.metadata.annotations, [JOB_RUNNER_ANNOTATION]: run.runner }
      : current.metadata.annotations;
  return {
    ...current,
    metadata: { ...current.metadata, ...(annotations ? { annotations } : {}) },
    spec: { ...current.spec, phase: run.phase },
  };
}

/**
 * Moves the khjob's phase forward as v2 does (Running when its run starts, Completed once recorded), with
 * the resourceVersion as precondition: a write that meets a newer khjob reads it again and decides again.
 */
export async function advancePhase(
  deps: { jobs: JobKube; log: Log },
  job: KhJob,
  run: { phase: typeof JobPhase.Running | typeof JobPhase.Completed; runner: string },
): Promise<void> {
  const { namespace, name } = job.metadata;
  await updateWithRetry<KhJob, void>({
    writer: 'job-phase',
    target: `${namespace}/${name}`,
    maxAttempts: 8,
    log: deps.log,
    initial: job,
    read: () => deps.jobs.readJob(namespace, name),
    decide: (current) => {
      const next = current && nextPhase(current, { ...run, uid: job.metadata.uid ?? '' });
      return next ? write(next, () => deps.log.info('khjob phase', { phase: run.phase })) : done(undefined);
    },
    persist: (next) => deps.jobs.replaceJob(next, 'job-phase'),
  });
}
