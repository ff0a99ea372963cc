import type { V1Pod } from '@kubernetes/client-node';
import { KH_ENV } from '../check/pod-builder.ts';
import { isRunPod } from '../check/run-label.ts';
import type { EndpointState } from './endpoint-probe.ts';

/** What an invocation that adopted a run does about the run's checker pod. */
export type AdoptedPodDecision =
  /** Keep it and wait for it: it reported already, or its report may still land. */
  | { kind: 'keep'; pod: V1Pod }
  /** Its report can never land (its endpoint is gone): remove exactly this pod, create one of the same run. */
  | { kind: 'replace'; pod: V1Pod }
  /** No pod of the run that is not already going away: create one. */
  | { kind: 'create' };

/**
 * The pod that speaks for an adopted run: the newest of its pods not being deleted. A pod that is being
 * deleted is going away whatever we decide; a report it sends while it terminates still counts (the report
 * is matched to the run by its UUID, not to a pod).
 */
export function adoptedPodOf(pods: V1Pod[], runUuid: string): V1Pod | undefined {
  const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return pods
    .filter((p) => isRunPod(p, runUuid) && !p.metadata?.deletionTimestamp)
    .sort((a, b) => created(b) - created(a))[0];
}

/** The endpoint the pod reports to, as it was created (KH_REPORTING_URL). */
export function reportingUrlOf(pod: V1Pod): string | undefined {
  return pod.spec?.containers?.[0]?.env?.find((e) => e.name === KH_ENV.reportingUrl)?.value;
}

/**
 * Keep what can still report. The adopted run's pod is replaced only when its report is known to be
 * undeliverable: the run has not reported and nothing listens at the pod's endpoint any more (the runner
 * that hosted it died). An endpoint that answers, or one we cannot tell about, may still deliver the
 * pod's report (a shared endpoint, or the previous runner's own, alive but cut off from the API server),
 * so the pod is kept and the run waits for its report: it reaches the khstate through whichever endpoint
 * the pod posts to, and the report is matched to the run by its UUID.
 */
export function decideAdoptedPod(input: {
  pod: V1Pod | undefined;
  reported: boolean;
  endpoint: EndpointState;
}): AdoptedPodDecision {
  const { pod } = input;
  if (!pod) return { kind: 'create' };
  if (input.reported || input.endpoint !== 'dead') return { kind: 'keep', pod };
  return { kind: 'replace', pod };
}
