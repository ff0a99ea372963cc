import type { V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL } from '../check/pod-builder.ts';
import { isRunPod } from '../check/run-label.ts';
import { KH_GROUP, KH_VERSION } from '../state/resources.ts';
import { isPodTerminal } from './assess.ts';

/**
 * Whether khrun created this checker pod: pod-builder makes the khcheck its owner, which Kuberhealthy v2
 * never does (its checker pods are owned by the Kuberhealthy pod, or by nothing). v2's pods carry the same
 * check-name label, so during a migration, when both run a check, the label alone would also match v2's
 * live pods. Pure.
 */
export function isKhrunCheckerPod(pod: V1Pod): boolean {
  const check = pod.metadata?.labels?.[CHECK_NAME_LABEL];
  return (pod.metadata?.ownerReferences ?? []).some(
    (o) => o.apiVersion === `${KH_GROUP}/${KH_VERSION}` && o.kind === 'KuberhealthyCheck' && o.name === check,
  );
}

/**
 * Which checker pods of a check to remove before a new run: of the pods khrun created (isKhrunCheckerPod),
 * every unfinished pod of another run (no two runs' pods may overlap), and finished pods beyond the newest
 * keepFinished (kept for debugging). Pods khrun did not create are never removed.
 */
export function podsToRemove(pods: V1Pod[], currentRunUuid: string, keepFinished: number): V1Pod[] {
  const others = pods.filter((p) => isKhrunCheckerPod(p) && !isRunPod(p, currentRunUuid));
  const live = others.filter((p) => !isPodTerminal(p) && !p.metadata?.deletionTimestamp);
  const finished = others
    .filter((p) => isPodTerminal(p) && !p.metadata?.deletionTimestamp)
    .sort((a, b) => createdMs(b) - createdMs(a));
  return [...live, ...finished.slice(Math.max(0, keepFinished))];
}

function createdMs(pod: V1Pod): number {
  const t = pod.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}
