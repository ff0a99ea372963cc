import type { V1PodTemplateSpec } from '@kubernetes/client-node';
import { type CheckCronJob, CRONJOB_NAME_MAX, checkCronJob } from '../schedule/check-cronjob.ts';
import { fitName, type RunJobOptions, runJobSpec } from '../schedule/run-job.ts';
import { HC_API_VERSION, HC_KIND, type HealthCheck } from './resources.ts';
import { timeoutMsOf } from './state-view.ts';
import { runnableViewOf } from './validate.ts';

/** The CronJob name for a HealthCheck: `khrun-hc-<name>`, so a khcheck of the same name keeps its own. */
export function healthCheckCronJobName(hc: { namespace: string; name: string }): string {
  return fitName('khrun-hc', hc, CRONJOB_NAME_MAX);
}

/**
 * One CronJob per Kuberhealthy v3 HealthCheck, made as a khcheck's is (checkCronJob on the HealthCheck's
 * khcheck view, with v3's durations: the schedule from runInterval, Forbid, no catch-up), but named,
 * owned and run as the HealthCheck's: deleting the HealthCheck deletes it, and its runner is
 * `khrun run --healthcheck` (HEALTHCHECK_NAME). Pure.
 */
export function healthCheckCronJob(
  hc: HealthCheck,
  template: V1PodTemplateSpec,
  opts: RunJobOptions,
): CheckCronJob {
  const made = checkCronJob(runnableViewOf(hc), template, opts);
  const { namespace, name, uid = '' } = hc.metadata;
  const spec = made.cronJob.spec!;
  return {
    ...made,
    cronJob: {
      ...made.cronJob,
      metadata: {
        ...made.cronJob.metadata,
        name: healthCheckCronJobName({ namespace, name }),
        ownerReferences: [{ apiVersion: HC_API_VERSION, kind: HC_KIND, name, uid, controller: true }],
      },
      spec: {
        ...spec,
        jobTemplate: {
          ...spec.jobTemplate,
          spec: runJobSpec(
            template,
            {
              namespace,
              name,
              timeoutMs: timeoutMsOf(hc),
              runIntervalMs: made.choice.intervalMs,
              kind: 'healthcheck',
            },
            opts,
          ),
        },
      },
    },
  };
}
