import type { RunTarget } from '../core/run-target.ts';
import { HealthCheckNotFoundError } from '../healthcheck/not-found.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from '../healthcheck/resources.ts';
import { timeoutMsOf } from '../healthcheck/state-view.ts';
import { jobAsCheck, KHJOB_PLURAL, type KhJob } from '../job/khjob.ts';
import { JobNotFoundError } from '../job/run-khjob.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import type { CheckRef } from '../schedule/run-job.ts';
import { scheduleOf } from '../schedule/schedule-of.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck } from '../state/resources.ts';
import { asRerunError } from './errors.ts';

const WHERE = {
  khcheck: { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL },
  khjob: { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL },
  healthcheck: { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL },
} as const;

/**
 * What the tick's dispatcher would send for the object (lib/schedule/tick-khchecks.ts, lib/job/tick.ts,
 * lib/healthcheck/tick.ts): its kind, name and timeout, and a khcheck's interval. Pure.
 */
export function checkRefOf(target: RunTarget, object: unknown): CheckRef {
  const { kind, namespace, name } = target;
  switch (kind) {
    case 'khcheck': {
      const schedule = scheduleOf(object as KhCheck);
      return { kind, namespace, name, timeoutMs: schedule.timeoutMs, runIntervalMs: schedule.runIntervalMs };
    }
    case 'khjob':
      return { kind, namespace, name, timeoutMs: scheduleOf(jobAsCheck(object as KhJob)).timeoutMs };
    case 'healthcheck':
      return { kind, namespace, name, timeoutMs: timeoutMsOf(object as HealthCheck) };
  }
}

function notFound(target: RunTarget, cause: unknown): Error {
  const options = { cause };
  switch (target.kind) {
    case 'khcheck':
      return new CheckNotFoundError(target.namespace, target.name, 'khcheck', undefined, options);
    case 'khjob':
      return new JobNotFoundError(target.namespace, target.name);
    case 'healthcheck':
      return new HealthCheckNotFoundError(target.namespace, target.name, options);
  }
}

/**
 * Reads the object to run, as the person running it: a missing one is its kind's NotFoundError (exit 2,
 * before any Job exists), a 403 a RerunForbiddenError naming `get` on its resource.
 */
export async function readTargetRef(client: KubeClient, target: RunTarget): Promise<CheckRef> {
  const where = WHERE[target.kind];
  try {
    const object = await retryTransient(() =>
      client.custom.getNamespacedCustomObject({ ...where, namespace: target.namespace, name: target.name }),
    );
    return checkRefOf(target, object);
  } catch (error) {
    if (isNotFound(error)) throw notFound(target, error);
    throw asRerunError(error, {
      verb: 'get',
      resource: `${where.plural}.${where.group}`,
      namespace: target.namespace,
    });
  }
}
