import type { V1Job, V1PodTemplateSpec } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import { type CheckRef, DEFAULT_RUN_JOB_OPTIONS, fitName, runJob } from '../schedule/run-job.ts';
import { asRerunError, RunnerTemplateMissingError } from './errors.ts';

/** Where the runner PodTemplate is: khrun's namespace and the template's name (lib/config says which). */
export interface TemplateRef {
  namespace: string;
  name: string;
}

/** Names of the Jobs people start: `khrun-rerun-<check>-<5 characters the API server adds>`. */
export const RERUN_JOB_PREFIX = 'khrun-rerun';

/** Job names become the `job-name` label of their pods: at most 63 characters, 5 of them the server's. */
const MAX_GENERATE_NAME = 63 - 5;

/** The runner PodTemplate's pod template; missing: khrun is not installed there (RunnerTemplateMissingError). */
export async function readRunnerPodTemplate(
  client: KubeClient,
  ref: TemplateRef,
): Promise<V1PodTemplateSpec> {
  try {
    const found = await retryTransient(() =>
      client.core.readNamespacedPodTemplate({ name: ref.name, namespace: ref.namespace }),
    );
    if (!found.template) throw new RunnerTemplateMissingError(ref.namespace, ref.name);
    return found.template;
  } catch (error) {
    if (isNotFound(error)) throw new RunnerTemplateMissingError(ref.namespace, ref.name, { cause: error });
    throw asRerunError(error, { verb: 'get', resource: 'podtemplates', namespace: ref.namespace });
  }
}

/** The Job a person's run creates: the tick's (runJob, the same builder), named to be told apart. */
export function rerunJob(template: V1PodTemplateSpec, check: CheckRef, namespace: string): V1Job {
  return runJob(template, check, DEFAULT_RUN_JOB_OPTIONS, {
    namespace,
    generateName: `${fitName(RERUN_JOB_PREFIX, check, MAX_GENERATE_NAME - 1)}-`,
  });
}

/**
 * Creates the runner Job for check in the template's namespace, as the person running khrun, and returns
 * it as created (its name, uid and spec). A 403 is a RerunForbiddenError naming `create jobs`. Not retried
 * after a lost answer: a Job created twice would be two runs, of which the second finds the first's claim
 * live and records nothing.
 */
export async function createRerunJob(
  client: KubeClient,
  template: V1PodTemplateSpec,
  check: CheckRef,
  namespace: string,
): Promise<V1Job> {
  try {
    return await client.batch.createNamespacedJob({ namespace, body: rerunJob(template, check, namespace) });
  } catch (error) {
    throw asRerunError(error, { verb: 'create', resource: 'jobs.batch', namespace });
  }
}
