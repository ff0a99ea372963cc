import type { V1Job, V1PodTemplateSpec } from '@kubernetes/client-node';
import { healthCheckApi } from '../healthcheck/healthcheck-api.ts';
import { listHealthChecks } from '../healthcheck/list.ts';
import { listKhJobs } from '../job/list.ts';
import { classifyApiError, isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { kubePort } from '../kube/kube-port.ts';
import { retryTransient } from '../kube/transient.ts';
import { kubeNamespaceDefaults } from '../notify/namespace-defaults.ts';
import { batchJobMetadata, runBatchJobSpec } from '../schedule/batch-job.ts';
import type { Dispatcher } from '../schedule/dispatcher.ts';
import { listInScope } from '../schedule/list-in-scope.ts';
import { type CheckRef, fitName, type RunJobOptions, runJob } from '../schedule/run-job.ts';
import { KHCHECK_PLURAL, KHSTATE_PLURAL, type KhCheck, type KhState } from '../state/resources.ts';
import type { TickKube } from './tick-port.ts';

/** Job names per kind: a khjob or HealthCheck of a khcheck's name never takes its Job name. */
const REF_PREFIX = { khcheck: 'khrun-run', khjob: 'khrun-job', healthcheck: 'khrun-hc' } as const;

/** TickKube over the API server. */
export function tickKube(client: KubeClient): TickKube {
  const port = kubePort(client);
  return {
    listChecks: (scope) => retryTransient(() => listInScope<KhCheck>(client, KHCHECK_PLURAL, scope)),
    listStates: (scope) => retryTransient(() => listInScope<KhState>(client, KHSTATE_PLURAL, scope)),
    // kubePort tries its reads again itself.
    readState: port.readState,
    createState: port.createState,
    replaceState: port.replaceState,
    listJobs: (scope) => retryTransient(() => listKhJobs(client, scope)),
    listHealthChecks: (scope) => retryTransient(() => listHealthChecks(client, scope)),
    healthChecks: healthCheckApi(client),
    readNotifyDefaults: kubeNamespaceDefaults(client),
  };
}

/** Reads the runner pod template (a v1 PodTemplate) that dispatched Jobs and per-check CronJobs are made from. */
export async function readRunnerTemplate(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<V1PodTemplateSpec> {
  try {
    const found = await retryTransient(() => client.core.readNamespacedPodTemplate({ name, namespace }));
    if (!found.template) throw new Error(`PodTemplate ${namespace}/${name} has no template`);
    return found.template;
  } catch (error) {
    if (isNotFound(error)) {
      throw new Error(
        `the runner PodTemplate ${namespace}/${name} does not exist; apply infra/deploy (kubectl apply -k) or pass --pod-template`,
      );
    }
    throw error;
  }
}

/** Seconds since the epoch in base 36: a short, sortable part of the names of dispatched Jobs. */
const stamp = (nowMs: number) => Math.floor(nowMs / 1000).toString(36);

/**
 * Cluster mode: each dispatch is a Job in the tick's namespace made from the runner PodTemplate: one per
 * check, or one per batch of khchecks (batch-job.ts). A Job's name carries the dispatch time (and a batch's
 * the tick's token), so it is unique per claim; an AlreadyExists means this exact dispatch was sent
 * already (a retried tick) and counts as done.
 */
export function jobDispatcher(opts: {
  client: KubeClient;
  namespace: string;
  template: V1PodTemplateSpec;
  jobOptions: RunJobOptions;
}): Dispatcher {
  const batch = opts.client.batch;
  const create = async (body: V1Job) => {
    try {
      await batch.createNamespacedJob({ namespace: opts.namespace, body });
    } catch (error) {
      if (classifyApiError(error) === 'AlreadyExists') return;
      throw error;
    }
  };
  return {
    refFor: (check, nowMs) =>
      `${fitName(REF_PREFIX[check.kind ?? 'khcheck'], check, 52 - 9)}-${stamp(nowMs)}`,
    runsKhJobs: true,
    runsHealthChecks: true,
    async dispatch(check: CheckRef, ref: string) {
      await create(runJob(opts.template, check, opts.jobOptions, { name: ref, namespace: opts.namespace }));
    },
    batch: {
      refFor: (batchId, nowMs) => `khrun-batch-${stamp(nowMs)}-${batchId}`,
      async dispatch(checks, ref) {
        await create({
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: batchJobMetadata(ref, opts.namespace, checks),
          spec: runBatchJobSpec(opts.template, checks, opts.jobOptions),
        });
      },
    },
  };
}
