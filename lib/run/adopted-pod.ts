import { isIP } from 'node:net';
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
 * The pod that speaks for an adopted run: the newest of its pods not being deleted, among those owned by the
 * check's object (ownerUid). A pod that only carries the run's label, made by whoever may create pods in the
 * namespace, is never adopted. A pod that is being deleted is going away whatever we decide; a report it
 * sends while it terminates still counts (the report is matched to the run by its UUID, not to a pod).
 */
export function adoptedPodOf(pods: V1Pod[], runUuid: string, ownerUid: string): V1Pod | undefined {
  const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return pods
    .filter(
      (p) =>
        isRunPod(p, runUuid) &&
        !p.metadata?.deletionTimestamp &&
        (p.metadata?.ownerReferences ?? []).some((o) => o.uid === ownerUid),
    )
    .sort((a, b) => created(b) - created(a))[0];
}

/**
 * Whether `url` has the shape of a runner's own report endpoint like `own` (this runner's): http(s) as
 * ours, a pod IP address (a runner's endpoint is its POD_IP), our port (any port when runners choose theirs
 * per process: `anyPort`) and our report path. Only such a URL is probed: a URL a pod's spec holds is
 * anyone's to write, and the probe must not become a request from the runner to any address of the
 * cluster. Pure.
 */
export function isRunnerEndpoint(url: string, own: string, opts: { anyPort?: boolean } = {}): boolean {
  const parse = (u: string) => {
    try {
      return new URL(u);
    } catch {
      return undefined;
    }
  };
  const theirs = parse(url);
  const ours = parse(own);
  if (!theirs || !ours) return false;
  const firstSegment = (u: URL) => u.pathname.split('/')[1] ?? '';
  return (
    theirs.protocol === ours.protocol &&
    (theirs.protocol === 'http:' || theirs.protocol === 'https:') &&
    isIP(theirs.hostname.replace(/^\[|\]$/g, '')) !== 0 &&
    (opts.anyPort === true || theirs.port === ours.port) &&
    theirs.username === '' &&
    theirs.password === '' &&
    firstSegment(theirs) === firstSegment(ours)
  );
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
