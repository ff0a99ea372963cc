import { createHash } from 'node:crypto';
import type { V1Container, V1EnvVar, V1Job, V1JobSpec, V1PodTemplateSpec } from '@kubernetes/client-node';
import type { KindName } from '../core/run-target.ts';
import { DEFAULT_FINISHED_JOB_TTL, type FinishedJobTtl, finishedJobTtlSeconds } from './job-retention.ts';

/** Labels on everything khrun creates for running checks, so it can find (and clean up) its own objects. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by' as const;
export const MANAGED_BY = 'khrun' as const;
export const COMPONENT_LABEL = 'app.kubernetes.io/component' as const;
/** The check a Job or CronJob runs: a label (cut to fit) for selection, annotations for the exact name. */
export const CHECK_LABEL = 'khrun.dev/check' as const;
export const RUNNER_CHECK_NAME_ANNOTATION = 'khrun.dev/check-name' as const;
export const RUNNER_CHECK_NAMESPACE_ANNOTATION = 'khrun.dev/check-namespace' as const;

/** The runner's container in the template: the one named "runner", else the first. */
export const RUNNER_CONTAINER = 'runner' as const;

export interface RunJobOptions {
  /** Seconds added to the check's timeout for pod start-up and clean-up: the Job's activeDeadlineSeconds. */
  deadlineMarginSeconds: number;
  /** Finished Jobs are garbage-collected after the check's interval, within these bounds. */
  finishedJobTtl: FinishedJobTtl;
}

export const DEFAULT_RUN_JOB_OPTIONS: RunJobOptions = {
  deadlineMarginSeconds: 120,
  finishedJobTtl: DEFAULT_FINISHED_JOB_TTL,
};

export interface CheckRef {
  namespace: string;
  name: string;
  timeoutMs: number;
  /** The check's run interval, which sizes how long its finished Job stays (job-retention.ts). */
  runIntervalMs?: number;
  /**
   * What the run is of: a khcheck's (CHECK_NAME), a khjob's (`khrun run --job`, KHJOB_NAME) or a
   * HealthCheck's (HEALTHCHECK_NAME). Absent: a khcheck, as the refs built by hand (CronJobs) are.
   */
  kind?: KindName;
}

const hash = (text: string, length: number) =>
  createHash('sha256').update(text).digest('hex').slice(0, length);

/**
 * A DNS-1123 name of at most maxLength characters: prefix + check name, cut and suffixed with a hash of
 * the full namespace/name when it does not fit (so two long names never collide).
 */
export function fitName(
  prefix: string,
  check: { namespace: string; name: string },
  maxLength: number,
): string {
  const full = `${prefix}-${check.name}`;
  if (full.length <= maxLength) return full;
  const suffix = hash(`${check.namespace}/${check.name}`, 6);
  return `${full.slice(0, maxLength - suffix.length - 1).replace(/[-.]+$/, '')}-${suffix}`;
}

/** The label value for a check name: label values are limited to 63 characters. */
export function checkLabelValue(check: { namespace: string; name: string }): string {
  return check.name.length <= 63 ? check.name : fitName('c', check, 63);
}

function withEnv(env: V1EnvVar[] | undefined, set: Record<string, string>): V1EnvVar[] {
  const kept = (env ?? []).filter((e) => !(e.name in set));
  return [...kept, ...Object.entries(set).map(([name, value]) => ({ name, value }))];
}

/** The variable naming what the runner runs: a khcheck (CHECK_NAME), khjob or HealthCheck. */
const NAME_ENV = { khcheck: 'CHECK_NAME', khjob: 'KHJOB_NAME', healthcheck: 'HEALTHCHECK_NAME' } as const;
const nameEnv = (check: CheckRef) => NAME_ENV[check.kind ?? 'khcheck'];

/** The name of the runner container a template holds (for podFailurePolicy). */
export function runnerContainerName(template: V1PodTemplateSpec): string {
  const containers = template.spec?.containers ?? [];
  const runner = containers.find((c) => c.name === RUNNER_CONTAINER) ?? containers[0];
  if (!runner) throw new Error('the runner pod template has no container');
  return runner.name;
}

/** What differs between the Job of one check and the Job of a batch; the rest is runnerJobSpec's. */
export interface RunnerJobParts {
  /** Set on the runner container (replacing the template's value of the same name). */
  env: Record<string, string>;
  /** Taken off the runner container: variables naming another form of run the template may carry. */
  dropEnv?: readonly string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The longest run the Job may hold, before the margin. */
  timeoutMs: number;
  /** Sizes how long the finished Job stays (job-retention.ts); undefined: the longest. */
  runIntervalMs: number | undefined;
}

/**
 * A runner Job's spec from the deployment's runner pod template (image, ServiceAccount, resources,
 * POD_IP/POD_NAME): never retried automatically (backoffLimit 0; exit 2, a configuration error, fails the
 * Job at once), bounded by the timeout plus a margin, collected about one interval after it finishes
 * (job-retention.ts). A pod lost to a disruption (drain, eviction) does not count: its replacement adopts
 * the run from the khstate.
 */
export function runnerJobSpec(
  template: V1PodTemplateSpec,
  parts: RunnerJobParts,
  opts: RunJobOptions,
): V1JobSpec {
  const runner = runnerContainerName(template);
  const drop = new Set(parts.dropEnv ?? []);
  const containers: V1Container[] = (template.spec?.containers ?? []).map((c) =>
    c.name === runner
      ? {
          ...c,
          env: withEnv(
            c.env?.filter((e) => !drop.has(e.name)),
            parts.env,
          ),
        }
      : c,
  );
  return {
    backoffLimit: 0,
    activeDeadlineSeconds: Math.ceil(parts.timeoutMs / 1000) + opts.deadlineMarginSeconds,
    ttlSecondsAfterFinished: finishedJobTtlSeconds(parts.runIntervalMs, opts.finishedJobTtl),
    podFailurePolicy: {
      rules: [
        { action: 'FailJob', onExitCodes: { containerName: runner, operator: 'In', values: [2] } },
        { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
      ],
    },
    template: {
      metadata: {
        ...template.metadata,
        labels: { ...(template.metadata?.labels ?? {}), [MANAGED_BY_LABEL]: MANAGED_BY, ...parts.labels },
        annotations: { ...(template.metadata?.annotations ?? {}), ...parts.annotations },
      },
      spec: { ...template.spec, restartPolicy: 'Never', containers },
    },
  };
}

/** The Job spec of one runner invocation for one check, named by CHECK_NAME/CHECK_NAMESPACE (runnerJobSpec). */
export function runJobSpec(template: V1PodTemplateSpec, check: CheckRef, opts: RunJobOptions): V1JobSpec {
  return runnerJobSpec(
    template,
    {
      env: { [nameEnv(check)]: check.name, CHECK_NAMESPACE: check.namespace },
      labels: { [CHECK_LABEL]: checkLabelValue(check) },
      annotations: {
        [RUNNER_CHECK_NAME_ANNOTATION]: check.name,
        [RUNNER_CHECK_NAMESPACE_ANNOTATION]: check.namespace,
      },
      timeoutMs: check.timeoutMs,
      runIntervalMs: check.runIntervalMs,
    },
    opts,
  );
}

/**
 * The runner Job of one check: its metadata (managed-by, component `run`, the check's label and name
 * annotations, by which khrun finds it: runnerJobChecks) and runJobSpec's spec. The tick's dispatch and a
 * person's `khrun run` in the cluster (lib/rerun) both make theirs here, so a Job a person starts is the
 * tick's but for its name: `name`, or `generateName` for the API server to complete.
 */
export function runJob(
  template: V1PodTemplateSpec,
  check: CheckRef,
  opts: RunJobOptions,
  at: { namespace: string } & ({ name: string } | { generateName: string }),
): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      ...at,
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY,
        [COMPONENT_LABEL]: 'run',
        [CHECK_LABEL]: checkLabelValue(check),
      },
      annotations: {
        [RUNNER_CHECK_NAME_ANNOTATION]: check.name,
        [RUNNER_CHECK_NAMESPACE_ANNOTATION]: check.namespace,
      },
    },
    spec: runJobSpec(template, check, opts),
  };
}
