import type { V1Pod } from '@kubernetes/client-node';
import { buildCheckerPod, retryPodName } from '../check/pod-builder.ts';
import { isRunPod } from '../check/run-label.ts';
import { apiErrorMessage, WriteConflict } from '../kube/errors.ts';
import type { ActiveRun } from '../state/khstate.ts';
import type { ValidCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import { adoptedPodOf, decideAdoptedPod, isRunnerEndpoint, reportingUrlOf } from './adopted-pod.ts';
import type { EndpointState } from './endpoint-probe.ts';
import { podsToRemove } from './pod-hygiene.ts';
import { removeCheckerPod } from './remove-pod.ts';

export type PodReady =
  | { kind: 'running' }
  | { kind: 'created'; name: string; pod: V1Pod }
  | { kind: 'failed'; reason: string };

/**
 * Removes unfinished pods of earlier runs and finished ones beyond the newest `keep`, of the check's pods as
 * the caller listed them (the same list then starts the run's pod watch).
 */
export async function clearEarlierPods(
  deps: AcquireDeps,
  check: ValidCheck,
  runUuid: string,
  keep: number,
  pods: V1Pod[],
) {
  for (const pod of podsToRemove(pods, runUuid, keep)) {
    const removal = await removeCheckerPod(deps, check.namespace, pod.metadata?.name ?? '');
    if (removal.kind !== 'kept')
      deps.log.info('removed earlier checker pod', { pod: pod.metadata?.name, phase: pod.status?.phase });
  }
}

/**
 * Makes sure the run has a checker pod. A fresh run gets its pod created. An adopted run keeps its pod
 * while that pod's report may still land (decideAdoptedPod): it reported already, or its endpoint answers
 * or cannot be told about. Only a pod whose endpoint is known dead is replaced (that very pod, by uid; same
 * run, new pod); a run with no pod left gets one.
 */
export async function ensureCheckerPod(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  opts: {
    adopted: boolean;
    reported: boolean;
    reportingUrl: string;
    signal: AbortSignal;
    /** The check's pods, listed after the claim. */
    pods: V1Pod[];
  },
): Promise<PodReady> {
  if (opts.adopted) {
    const pod = adoptedPodOf(opts.pods, run.uuid, check.uid);
    const endpoint = pod && !opts.reported ? await endpointOf(deps, pod, opts) : 'alive';
    const decision = decideAdoptedPod({ pod, reported: opts.reported, endpoint });
    if (decision.kind === 'keep') {
      deps.log.info("kept the adopted run's pod: its report may still land", {
        pod: decision.pod.metadata?.name,
        reported: opts.reported,
        endpoint,
      });
      return { kind: 'running' };
    }
    if (decision.kind === 'replace') {
      const { name = '', uid } = decision.pod.metadata ?? {};
      await removeCheckerPod(deps, check.namespace, name, uid);
      deps.log.info("replaced the adopted run's pod: its report endpoint can no longer take its report", {
        pod: name,
      });
    }
  }
  // A name the list shows taken by another run (one started within the same second) is not tried.
  const others = opts.pods.filter((p) => !isRunPod(p, run.uuid));
  const taken = new Set(others.map((p) => p.metadata?.name));
  return createCheckerPod(deps, check, run, opts.reportingUrl, taken);
}

/**
 * Whether the pod's endpoint may still take its report: ours does; another runner's is probed; any other
 * URL is not asked at all and may (unknown).
 */
function endpointOf(
  deps: AcquireDeps,
  pod: V1Pod,
  opts: { reportingUrl: string; signal: AbortSignal },
): Promise<EndpointState> | EndpointState {
  const url = reportingUrlOf(pod);
  if (url === undefined) return 'dead';
  if (url === opts.reportingUrl) return 'alive';
  if (!isRunnerEndpoint(url, opts.reportingUrl, { anyPort: deps.endpoints?.anyPort })) return 'unknown';
  return deps.endpoints?.probe(url, opts.signal) ?? 'unknown';
}

async function createCheckerPod(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  reportingUrl: string,
  taken: ReadonlySet<string | undefined>,
): Promise<PodReady> {
  const pod = buildCheckerPod({
    check,
    runUuid: run.uuid,
    reportingUrl,
    deadlineEpochMs: run.deadlineMs,
    nowEpochMs: run.startedAtMs,
  });
  pod.metadata = { ...pod.metadata, name: run.pod };
  const names = [run.pod, retryPodName(run.pod, run.uuid)];
  for (const name of names.filter((n, i) => i === names.length - 1 || !taken.has(n))) {
    try {
      pod.metadata.name = name;
      return { kind: 'created', name, pod: await deps.kube.createPod(pod) };
    } catch (error) {
      // An older run's pod can hold the name when two runs start within the same second.
      if (error instanceof WriteConflict) continue;
      const status = (error as { code?: number }).code;
      if (status === 422 || status === 400 || status === 403) {
        // The Status message: an admission policy's refusal says what it refused and how to allow it.
        const message = apiErrorMessage(error).split('\n')[0];
        return { kind: 'failed', reason: `failed to create pod for checker: ${message}` };
      }
      throw error;
    }
  }
  return { kind: 'failed', reason: `failed to create pod for checker: the name ${run.pod} is taken` };
}
