import { createHash } from 'node:crypto';
import type { V1CronJob, V1PodTemplateSpec } from '@kubernetes/client-node';
import { KH_GROUP, KH_VERSION, type KhCheck } from '../state/resources.ts';
import { type CronChoice, cronForInterval } from './cron.ts';
import {
  CHECK_LABEL,
  COMPONENT_LABEL,
  checkLabelValue,
  fitName,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  RUNNER_CHECK_NAME_ANNOTATION,
  RUNNER_CHECK_NAMESPACE_ANNOTATION,
  type RunJobOptions,
  runJobSpec,
} from './run-job.ts';
import { scheduleOf } from './schedule-of.ts';

export const CHECK_CRONJOB_COMPONENT = 'check-cronjob' as const;
export const SCHEDULE_NOTE_ANNOTATION = 'khrun.dev/schedule-note' as const;
export const RUN_INTERVAL_ANNOTATION = 'khrun.dev/run-interval' as const;
/** CronJob names are limited to 52 characters (the controller appends an 11-character suffix to Jobs). */
export const CRONJOB_NAME_MAX = 52;

export interface CheckCronJob {
  cronJob: V1CronJob;
  choice: CronChoice;
  /** Set for an invalid khcheck: scheduled anyway (v2's defaults) so its runner records why. */
  problem?: string;
}

/** The CronJob name for a check: `khrun-<check>`, cut to 52 characters with a hash when longer. */
export function cronJobName(check: { namespace: string; name: string }): string {
  return fitName('khrun', check, CRONJOB_NAME_MAX);
}

/**
 * One CronJob per khcheck, in the check's namespace and owned by it (deleting the khcheck deletes the
 * CronJob): the schedule from runInterval, one run at a time (Forbid), no catch-up burst after an outage
 * (startingDeadlineSeconds), and Jobs built like the tick's (backoffLimit 0, deadline = timeout + margin,
 * kept about one interval after they finish).
 */
export function checkCronJob(
  source: KhCheck,
  template: V1PodTemplateSpec,
  opts: RunJobOptions,
): CheckCronJob {
  const { namespace, name, uid = '' } = source.metadata;
  const check = { namespace, name };
  const schedule = scheduleOf(source);
  const seed = createHash('sha256')
    .update(uid || `${namespace}/${name}`)
    .digest()
    .readUInt32BE(0);
  const choice = cronForInterval(schedule.runIntervalMs, seed);
  const ref = { namespace, name, timeoutMs: schedule.timeoutMs, runIntervalMs: choice.intervalMs };
  const labels = {
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [COMPONENT_LABEL]: CHECK_CRONJOB_COMPONENT,
    [CHECK_LABEL]: checkLabelValue(check),
  };
  const annotations: Record<string, string> = {
    [RUNNER_CHECK_NAME_ANNOTATION]: check.name,
    [RUNNER_CHECK_NAMESPACE_ANNOTATION]: check.namespace,
    [RUN_INTERVAL_ANNOTATION]: String(source.spec?.runInterval ?? ''),
  };
  if (choice.note) annotations[SCHEDULE_NOTE_ANNOTATION] = choice.note;
  const intervalSeconds = Math.round(choice.intervalMs / 1000);
  return {
    choice,
    ...(schedule.problem ? { problem: schedule.problem } : {}),
    cronJob: {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: {
        name: cronJobName(check),
        namespace,
        labels,
        annotations,
        ownerReferences: [
          {
            apiVersion: `${KH_GROUP}/${KH_VERSION}`,
            kind: 'KuberhealthyCheck',
            name,
            uid,
            controller: true,
          },
        ],
      },
      spec: {
        schedule: choice.schedule,
        timeZone: 'Etc/UTC',
        concurrencyPolicy: 'Forbid',
        // Late by more than this (controller down, a run still going under Forbid): skip, don't catch up.
        startingDeadlineSeconds: Math.min(300, Math.max(30, Math.floor(intervalSeconds / 2))),
        successfulJobsHistoryLimit: 1,
        failedJobsHistoryLimit: 3,
        jobTemplate: { metadata: { labels }, spec: runJobSpec(template, ref, opts) },
      },
    },
  };
}
