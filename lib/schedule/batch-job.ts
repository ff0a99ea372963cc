import type { V1JobSpec, V1ObjectMeta, V1PodTemplateSpec } from '@kubernetes/client-node';
import {
  type CheckRef,
  COMPONENT_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  RUNNER_CHECK_NAME_ANNOTATION,
  RUNNER_CHECK_NAMESPACE_ANNOTATION,
  type RunJobOptions,
  runnerJobSpec,
} from './run-job.ts';

/**
 * A batch runner Job: one runner process drives several khchecks (lib/run's runner session). The runner
 * reads them from KHRUN_BATCH, a JSON array of {namespace, name}, instead of CHECK_NAME/CHECK_NAMESPACE.
 * Labels hold one value each, so the per-check label (CHECK_LABEL) is not set: the Job and its pod are
 * labelled as a batch, and the checks are listed in an annotation (runnerJobChecks reads either form).
 */
export const BATCH_ENV = 'KHRUN_BATCH' as const;
export const BATCH_LABEL = 'khrun.dev/batch' as const;
export const BATCH_CHECKS_ANNOTATION = 'khrun.dev/batch-checks' as const;

/** Variables naming a single run, which a batch runner must not see. */
const SINGLE_RUN_ENV = ['CHECK_NAME', 'CHECK_NAMESPACE', 'KHJOB_NAME', 'HEALTHCHECK_NAME'] as const;

export type BatchMember = { namespace: string; name: string };

/** KHRUN_BATCH's value (the contract with the runner): `[{"namespace":"ns","name":"check"}, ...]`. */
export function batchEnvValue(checks: readonly BatchMember[]): string {
  return JSON.stringify(checks.map(({ namespace, name }) => ({ namespace, name })));
}

/** Labels and annotations of a batch's Job and of its pod. */
export function batchJobMarks(checks: readonly CheckRef[]): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: { [BATCH_LABEL]: 'true' },
    annotations: { [BATCH_CHECKS_ANNOTATION]: batchEnvValue(checks) },
  };
}

/**
 * The Job spec of a batch: the runner template with KHRUN_BATCH, deadline from the longest timeout in the
 * batch (its checks run side by side), finished-Job retention from the shortest interval (job-retention.ts:
 * the most frequent check's next run is the soonest its runner's log stops mattering). Only khchecks.
 */
export function runBatchJobSpec(
  template: V1PodTemplateSpec,
  checks: readonly CheckRef[],
  opts: RunJobOptions,
): V1JobSpec {
  if (checks.length === 0) throw new Error('a batch Job needs at least one check');
  if (checks.some((c) => (c.kind ?? 'khcheck') !== 'khcheck'))
    throw new Error('a batch Job runs khchecks only');
  const intervals = checks.flatMap((c) => (c.runIntervalMs === undefined ? [] : [c.runIntervalMs]));
  const marks = batchJobMarks(checks);
  return runnerJobSpec(
    template,
    {
      env: { [BATCH_ENV]: batchEnvValue(checks) },
      dropEnv: SINGLE_RUN_ENV,
      labels: marks.labels,
      annotations: marks.annotations,
      timeoutMs: Math.max(...checks.map((c) => c.timeoutMs)),
      runIntervalMs: intervals.length ? Math.min(...intervals) : undefined,
    },
    opts,
  );
}

/** The metadata of a batch's Job: found by the same selectors as a single run's (managed-by, component). */
export function batchJobMetadata(name: string, namespace: string, checks: readonly CheckRef[]): V1ObjectMeta {
  const marks = batchJobMarks(checks);
  return {
    name,
    namespace,
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [COMPONENT_LABEL]: 'run', ...marks.labels },
    annotations: marks.annotations,
  };
}

/**
 * The checks a runner Job (or its pod) runs, from its annotations: a batch's list, or the one check of a
 * single run; [] for anything else. What finds runner Jobs by check reads this, since CHECK_LABEL is only
 * on single runs.
 */
export function runnerJobChecks(meta: V1ObjectMeta | undefined): BatchMember[] {
  const annotations = meta?.annotations ?? {};
  const listed = annotations[BATCH_CHECKS_ANNOTATION];
  if (listed !== undefined) {
    try {
      const parsed: unknown = JSON.parse(listed);
      if (!Array.isArray(parsed)) return [];
      return parsed.flatMap((m: unknown) => {
        const { namespace, name } = (m ?? {}) as Partial<BatchMember>;
        return typeof namespace === 'string' && typeof name === 'string' ? [{ namespace, name }] : [];
      });
    } catch {
      return [];
    }
  }
  const name = annotations[RUNNER_CHECK_NAME_ANNOTATION];
  const namespace = annotations[RUNNER_CHECK_NAMESPACE_ANNOTATION];
  return name !== undefined && namespace !== undefined ? [{ namespace, name }] : [];
}
