import type { V1Pod } from '@kubernetes/client-node';
import { RUN_ID_LABEL } from '../check/pod-builder.ts';
import { isPodTerminal } from './assess.ts';

/**
 * Which checker pods of a check to remove before a new run: every unfinished pod of another run (no two
 * runs' pods may overlap), and finished pods beyond the newest keepFinished (kept for debugging).
 */
export function podsToRemove(pods: V1Pod[], currentRunUuid: string, keepFinished: number): V1Pod[] {
  const others = pods.filter((p) => p.metadata?.labels?.[RUN_ID_LABEL] !== currentRunUuid);
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
