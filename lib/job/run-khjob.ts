import { shortId } from '../core/ids.ts';
import { NotFoundError } from '../core/not-found.ts';
import type { AcquireDeps } from '../run/acquire-deps.ts';
import type { EventSink } from '../run/events.ts';
import type { IterationResult } from '../run/iteration.ts';
import type { ValidCheck } from '../state/resources.ts';
import { closeStaleJobRun } from './close-stale.ts';
import { decideJobStep } from './decide.ts';
import type { JobKube } from './job-kube.ts';
import { jobKubePort, SecondJobRunRefused } from './job-port.ts';
import { asJobErrors } from './job-writes.ts';
import { JobPhase, jobAsCheck, jobRunUuid, type KhJob } from './khjob.ts';
import { advancePhase } from './phase.ts';

/** What a khjob invocation did: the engine's results, or nothing to do because the khjob already ran. */
export type JobRunResult = IterationResult | { kind: 'already-ran'; runUuid: string; reason: string };

/** The khjob named on the command line does not exist: a usage error (exit 2). */
export class JobNotFoundError extends NotFoundError {
  override readonly name: string = 'JobNotFoundError';
  constructor(
    readonly namespace: string,
    readonly jobName: string,
  ) {
    super(
      { resource: 'khjob', namespace, name: jobName },
      `khjob ${namespace}/${jobName} not found; list the khjobs with "kubectl get khjobs -A" and pass --job NAME --namespace NS`,
    );
  }
}

export interface KhJobRunDeps {
  jobs: JobKube;
  /** The engine's ports as for a khcheck; the driver makes them the khjob's (jobKubePort). */
  base: AcquireDeps;
  /** Outcome Events on the KuberhealthyJob (job-events.ts). */
  events?: EventSink;
  /** One iteration of the run engine with the deps adapted: runCheck with its report endpoint, in production. */
  iterate: (adapt: (deps: AcquireDeps) => AcquireDeps) => Promise<IterationResult>;
}

export interface KhJobRunConfig {
  namespace: string;
  name: string;
  runner: string;
  maxConflictRetries?: number;
}

/** Rounds of read → decide → act before giving up; each extra round follows a refused second run. */
const MAX_ROUNDS = 4;

/**
 * One invocation for a khjob: runs it once, as v2 does (phase Running, the run, the outcome in the khstate,
 * phase Completed), through the run engine as for a khcheck. A killed invocation is finished by the next,
 * as a khcheck's is: the run is adopted while its deadline holds, and closed (never started again) after.
 * A khjob that already ran is left as it is (phase made Completed if a killed runner could not).
 */
export async function runKhJob(deps: KhJobRunDeps, cfg: KhJobRunConfig): Promise<JobRunResult> {
  const { log } = deps.base;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const job = await deps.jobs.readJob(cfg.namespace, cfg.name);
    if (!job) throw new JobNotFoundError(cfg.namespace, cfg.name);
    const runUuid = jobRunUuid(job);
    const adapt = (d: AcquireDeps): AcquireDeps => ({
      ...d,
      kube: jobKubePort(
        d.kube,
        job,
        (ns, name) => deps.jobs.readJob(ns, name),
        // v2 marks the khjob Running as its run starts: here once this invocation holds the run.
        () => advancePhase({ jobs: deps.jobs, log }, job, { phase: JobPhase.Running, runner: cfg.runner }),
      ),
      ids: { runUuid: () => runUuid },
      ...(deps.events ? { events: deps.events } : {}),
    });
    const state = await deps.base.kube.readState(cfg.namespace, cfg.name);
    const step = decideJobStep(job, state, deps.base.clock.nowMs());
    const complete = () =>
      advancePhase({ jobs: deps.jobs, log }, job, { phase: JobPhase.Completed, runner: cfg.runner });
    switch (step.kind) {
      case 'ran':
        await complete();
        return { kind: 'already-ran', runUuid, reason: `khjob ${cfg.namespace}/${cfg.name} already ran` };
      case 'foreign':
        return {
          kind: 'busy',
          runUuid: '',
          reason: `khjob ${cfg.namespace}/${cfg.name} is Running under another runner (Kuberhealthy?)`,
        };
      case 'close-stale': {
        const outcome = await closeStaleJobRun(adapt(deps.base), checkOf(job), {
          runUuid,
          runner: cfg.runner,
          maxAttempts: cfg.maxConflictRetries ?? 8,
        });
        if (!outcome) continue;
        await complete();
        return { kind: 'recorded', runUuid, outcome: jobOutcome(outcome), adopted: true };
      }
      case 'run': {
        try {
          const result = await deps.iterate(adapt);
          if (result.kind !== 'recorded') return result;
          await complete();
          return { ...result, outcome: jobOutcome(result.outcome) };
        } catch (error) {
          if (!(error instanceof SecondJobRunRefused)) throw error;
          log.info('khjob run already recorded by another invocation; deciding again', {
            run: shortId(runUuid),
          });
        }
      }
    }
  }
  throw new Error(`khjob ${cfg.namespace}/${cfg.name}: no decision held after ${MAX_ROUNDS} rounds`);
}

const jobOutcome = <T extends { errors: string[] }>(outcome: T): T => ({
  ...outcome,
  errors: asJobErrors(outcome.errors),
});

/** The khjob as the engine's checks are identified (closing a stale run needs no more). */
function checkOf(job: KhJob): ValidCheck {
  const { name, namespace, uid } = job.metadata;
  return { name, namespace, uid: uid ?? '', runIntervalMs: 0, timeoutMs: 0, source: jobAsCheck(job) };
}
