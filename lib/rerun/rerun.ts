import type { KubernetesObject } from '@kubernetes/client-node';
import type { RunTarget } from '../core/run-target.ts';
import { kubeListWatchTransport } from '../kube/list-watch-transport.ts';
import { LogUnavailableError, readPodLog } from '../logs/pod-log.ts';
import { runnerContainerName } from '../schedule/run-job.ts';
import { readLastOutcome } from '../state/khstate.ts';
import { asRerunError } from './errors.ts';
import { type FollowDeps, followJob } from './follow.ts';
import type { FollowEnd, FollowStart, FollowView } from './follow-decide.ts';
import { documentFromLog, documentFromState, type RunDocument } from './runner-document.ts';
import { createRerunJob, readRunnerPodTemplate, type TemplateRef } from './start-job.ts';
import { stateSource } from './state-source.ts';
import { readTargetRef } from './target-ref.ts';

export interface JobRef {
  namespace: string;
  name: string;
}

/** How a run in the cluster ended for the person following it. */
export type RerunOutcome =
  /** The runner's `khrun run -o json` document, from its log, or rebuilt from the state it recorded. */
  | { kind: 'document'; job: JobRef; document: RunDocument; from: 'runner-log' | 'state'; note?: string }
  /** The Job ended without a result to show: the runner's exit code when it exited, and why. */
  | { kind: 'no-document'; job: JobRef; runnerExitCode?: number; reason: string }
  /** Ctrl-C: the Job keeps running. */
  | { kind: 'interrupted'; job: JobRef }
  /** The Job outlived its activeDeadlineSeconds by more than the grace: something holds it. */
  | { kind: 'timed-out'; job: JobRef; afterMs: number };

/** The runner's log lines read for its document, which it prints last (its log lines end before). */
const RUNNER_LOG_LINES = 200;

/** What to tell a person who stops following: the Job goes on, and how to watch or stop it. */
export function jobKeepsRunning(job: JobRef): string {
  return (
    `the runner Job ${job.namespace}/${job.name} keeps running and records the outcome; follow it with ` +
    `\`kubectl logs -f job/${job.name} -n ${job.namespace}\`, or stop it with ` +
    `\`kubectl delete job ${job.name} -n ${job.namespace}\``
  );
}

/**
 * `khrun run` in the cluster: the object to run is read (a missing one is its kind's NotFoundError, before
 * anything is created), then the runner PodTemplate and the run's state; a runner Job is made from the
 * template exactly as the tick makes one (lib/schedule/run-job.ts) and followed by watch to its end
 * (follow.ts); its result is the document its runner printed, else the outcome its pod recorded in the
 * state. Everything is done as the caller's identity; a 403 names the verb and resource (errors.ts).
 */
export async function rerunInCluster(
  deps: FollowDeps,
  req: { target: RunTarget; template: TemplateRef },
): Promise<RerunOutcome> {
  const { client, progress } = deps;
  const { target } = req;
  const check = await readTargetRef(client, target);
  const template = await readRunnerPodTemplate(client, req.template);
  const source = stateSource(target);
  const listed = await kubeListWatchTransport<KubernetesObject>(client)
    .list(source.path, { fieldSelector: source.fieldSelector }, deps.signal)
    .catch((error: unknown) => {
      throw asRerunError(error, { verb: 'list', resource: source.resource, namespace: target.namespace });
    });
  const before = listed.items[0] ? source.view(listed.items[0]) : null;
  const start: FollowStart = {
    lastOutcomeUuid: readLastOutcome(before)?.uuid,
    runnerContainer: runnerContainerName(template),
  };
  const created = await createRerunJob(client, template, check, req.template.namespace);
  const job = { namespace: req.template.namespace, name: created.metadata?.name ?? '' };
  progress(
    `runner Job ${job.namespace}/${job.name} created from PodTemplate ${req.template.namespace}/${req.template.name}`,
  );
  let followed: Awaited<ReturnType<typeof followJob>>;
  try {
    followed = await followJob(deps, { job: created, start, state: { source, listed } });
  } catch (error) {
    // Ctrl-C while the watches were being set up is Ctrl-C all the same.
    if (deps.signal.aborted) return { kind: 'interrupted', job };
    progress(jobKeepsRunning(job));
    throw error;
  }
  if (followed.kind === 'interrupted') return { kind: 'interrupted', job };
  if (followed.kind === 'timed-out') return { kind: 'timed-out', job, afterMs: followed.afterMs };
  return resultOf(deps, { job, target, start, end: followed.end, view: followed.view });
}

/** The document of a finished Job: its runner's, else the outcome its pods recorded, else why there is none. */
async function resultOf(
  deps: FollowDeps,
  r: { job: JobRef; target: RunTarget; start: FollowStart; end: FollowEnd; view: FollowView },
): Promise<RerunOutcome> {
  const { job, end } = r;
  if (end.kind === 'job-deleted')
    return { kind: 'no-document', job, reason: 'the runner Job was deleted before it finished' };
  let problem: string;
  if (end.pod) {
    try {
      const log = await readPodLog(deps.client.core, {
        namespace: job.namespace,
        pod: end.pod,
        container: r.start.runnerContainer,
        tailLines: RUNNER_LOG_LINES,
      });
      const document = documentFromLog(log, r.target);
      if (document) return { kind: 'document', job, document, from: 'runner-log' };
      problem = `the log of runner pod ${end.pod} holds no result document (its PodTemplate's arguments should be \`run --output json\`)`;
    } catch (error) {
      if (!(error instanceof LogUnavailableError)) throw error;
      problem = `the log of runner pod ${end.pod} could not be read: ${error.message}`;
    }
  } else {
    problem = 'the runner Job made no pod';
  }
  const names = r.view.pods.map((p) => p.metadata?.name ?? '');
  const document = documentFromState(r.view.state, r.target, r.start.lastOutcomeUuid, names);
  if (document) return { kind: 'document', job, document, from: 'state', note: problem };
  const failed = end.succeeded ? '' : `the runner Job failed${end.reason ? ` (${end.reason})` : ''}; `;
  return {
    kind: 'no-document',
    job,
    ...(end.exitCode === undefined ? {} : { runnerExitCode: end.exitCode }),
    reason: `${failed}${problem}`,
  };
}
