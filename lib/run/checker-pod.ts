import type { V1Pod } from '@kubernetes/client-node';
import { buildCheckerPod, KH_ENV, RUN_ID_LABEL } from '../check/pod-builder.ts';
import { WriteConflict } from '../kube/errors.ts';
import type { ActiveRun } from '../state/khstate.ts';
import type { ValidCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire.ts';
import { podsToRemove } from './pod-hygiene.ts';

export type PodReady =
  | { kind: 'running' }
  | { kind: 'created'; name: string }
  | { kind: 'failed'; reason: string };

/** Removes unfinished pods of earlier runs and finished ones beyond the newest `keep`. */
export async function clearEarlierPods(deps: AcquireDeps, check: ValidCheck, runUuid: string, keep: number) {
  const pods = await deps.kube.listCheckPods(check.namespace, check.name);
  for (const pod of podsToRemove(pods, runUuid, keep)) {
    await deps.kube.removePod(check.namespace, pod.metadata?.name ?? '');
    deps.log.info('removed earlier checker pod', { pod: pod.metadata?.name, phase: pod.status?.phase });
  }
}

/**
 * Makes sure the run has a checker pod that can report to reportingUrl: an adopted run keeps its pod when
 * it reports here or has reported already; a pod that reports to a dead runner's endpoint is replaced
 * (same run, new pod); a fresh run gets its pod created.
 */
export async function ensureCheckerPod(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  opts: { adopted: boolean; reported: boolean; reportingUrl: string },
): Promise<PodReady> {
  if (opts.adopted) {
    const pods = await deps.kube.listCheckPods(check.namespace, check.name);
    const existing = pods.find((p) => p.metadata?.labels?.[RUN_ID_LABEL] === run.uuid);
    if (existing && (opts.reported || reportingUrlOf(existing) === opts.reportingUrl))
      return { kind: 'running' };
    if (existing) {
      // The pod reports to the endpoint of the runner that died; it can never reach us. Same run, new pod.
      await deps.kube.removePod(check.namespace, existing.metadata?.name ?? '');
      deps.log.info("replaced the adopted run's pod: its report endpoint is gone", {
        pod: existing.metadata?.name,
      });
    }
  }
  return createCheckerPod(deps, check, run, opts.reportingUrl);
}

async function createCheckerPod(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  reportingUrl: string,
): Promise<PodReady> {
  const pod = buildCheckerPod({
    check,
    runUuid: run.uuid,
    reportingUrl,
    deadlineEpochMs: run.deadlineMs,
    nowEpochMs: run.startedAtMs,
  });
  pod.metadata = { ...pod.metadata, name: run.pod };
  for (const name of [run.pod, `${run.pod}-${deps.clock.nowMs().toString(36)}`]) {
    try {
      pod.metadata.name = name;
      await deps.kube.createPod(pod);
      return { kind: 'created', name };
    } catch (error) {
      // An older run's pod can hold the name when two runs start within the same second.
      if (error instanceof WriteConflict) continue;
      const status = (error as { code?: number }).code;
      if (status === 422 || status === 400 || status === 403) {
        const message = String((error as Error).message ?? error).split('\n')[0];
        return { kind: 'failed', reason: `failed to create pod for checker: ${message}` };
      }
      throw error;
    }
  }
  return { kind: 'failed', reason: `failed to create pod for checker: the name ${run.pod} is taken` };
}

/** Removes every pod of the run (after an outcome that leaves nothing to keep running). */
export async function removeRunPods(deps: AcquireDeps, check: ValidCheck, runUuid: string) {
  const pods = await deps.kube.listCheckPods(check.namespace, check.name);
  for (const pod of pods.filter((p) => p.metadata?.labels?.[RUN_ID_LABEL] === runUuid)) {
    await deps.kube.removePod(check.namespace, pod.metadata?.name ?? '');
  }
}

function reportingUrlOf(pod: V1Pod): string | undefined {
  return pod.spec?.containers?.[0]?.env?.find((e) => e.name === KH_ENV.reportingUrl)?.value;
}
