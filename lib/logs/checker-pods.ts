import type { V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL, podNameFor, retryPodName } from '../check/pod-builder.ts';
import type { KindName } from '../core/run-target.ts';
import { v3PodName } from '../healthcheck/pod-view.ts';
import { HC_POD } from '../healthcheck/resources.ts';
import { readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { KHJOB_WORKLOAD, WORKLOAD_LABEL } from '../state/workload.ts';

/**
 * The label selector of a check's checker pods, as khrun (and Kuberhealthy) label them: a khcheck's and a
 * khjob's by v2's check-name label (a khjob's also carry khrun's workload label), a HealthCheck's by v3's
 * `healthcheck` label.
 */
export function checkerPodSelector(kind: KindName, name: string): string {
  switch (kind) {
    case 'khcheck':
      return `${CHECK_NAME_LABEL}=${name},${WORKLOAD_LABEL}!=${KHJOB_WORKLOAD}`;
    case 'khjob':
      return `${CHECK_NAME_LABEL}=${name},${WORKLOAD_LABEL}=${KHJOB_WORKLOAD}`;
    case 'healthcheck':
      return `${HC_POD.checkLabel}=${name}`;
  }
}

const createdMs = (p: V1Pod) => Date.parse(String(p.metadata?.creationTimestamp ?? '')) || 0;

/**
 * The checker pods of a check, newest first: the first is the last run's (finished, or still running),
 * the second the run's before (`--previous`). Pods being deleted are left out: they belong to runs khrun
 * is clearing away. Pure.
 */
export function runPodsNewestFirst(pods: readonly V1Pod[]): V1Pod[] {
  return pods
    .filter((p) => !p.metadata?.deletionTimestamp)
    .sort(
      (a, b) => createdMs(b) - createdMs(a) || (b.metadata?.name ?? '').localeCompare(a.metadata?.name ?? ''),
    );
}

/**
 * The names the checker pod of the last recorded run can have, from the state alone (no pod is listed), in
 * the order to try them: the name it took when its first was held by an older run's pod (retryPodName:
 * two runs in one second), then its first name, `<check>-<unix second of the run's start>` (v2's), a
 * HealthCheck's `<check>-<first 5 characters of the run UUID>` (v3's). The first that exists is the run's:
 * the retry name holds the run's UUID, and when it does not exist the run took its first name. A recorded
 * run may have had no pod at all: reading finds nothing, and says so. Empty when no run was recorded. Pure.
 */
export function lastRunPodNames(kind: KindName, name: string, state: KhState | null): string[] {
  const last = readLastOutcome(state);
  if (!last) return [];
  const built = podNameFor(name, last.startedAtMs);
  const first = kind === 'healthcheck' ? v3PodName(built, name, last.uuid) : built;
  return [retryPodName(first, last.uuid), first];
}
