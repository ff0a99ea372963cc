import type { V1Pod } from '@kubernetes/client-node';
import { readActiveRun, readLastOutcome } from '../state/khstate.ts';
import { KH_GROUP, KH_VERSION, type KhState } from '../state/resources.ts';
import { KHJOB_WORKLOAD, labelledAsJob, WORKLOAD_LABEL } from '../state/workload.ts';
import { KHJOB_KIND, type KhJob } from './khjob.ts';

const CHECK_PREFIX = 'Check execution error: ';
/** v2.7.1's wording for a khjob's failed run (setJobExecutionError), where a khcheck's says "Check". */
export const JOB_EXECUTION_ERROR_PREFIX = 'Job execution error: ';

/** Errors in v2's khjob wording: the run engine's "Check execution error: " becomes "Job execution error: ". */
export function asJobErrors(errors: readonly string[]): string[] {
  return errors.map((e) =>
    e.startsWith(CHECK_PREFIX) ? `${JOB_EXECUTION_ERROR_PREFIX}${e.slice(CHECK_PREFIX.length)}` : e,
  );
}

/** A khstate write of a khjob's run: labelled as a khjob's, its errors in v2's khjob wording. Pure. */
export function asJobState(state: KhState): KhState {
  const labelled = labelledAsJob(state);
  const errors = Array.isArray(state.spec?.Errors) ? state.spec.Errors : [];
  return { ...labelled, spec: { ...labelled.spec, Errors: asJobErrors(errors) } };
}

/**
 * Whether a khstate write would start a second run of a khjob: it carries the khjob's run as the active
 * one while the same run is already recorded as the last outcome. A claim that lost the race to a runner
 * that has since finished writes exactly that (the claim keeps the recorded outcome it read), and so does
 * closing a stale run and claiming anew; both must not happen for a khjob. Pure.
 */
export function startsSecondRun(state: KhState, runUuid: string): boolean {
  return readActiveRun(state)?.uuid === runUuid && readLastOutcome(state)?.uuid === runUuid;
}

/**
 * The checker pod of a khjob: owned by the KuberhealthyJob (the engine names the khcheck it runs as; an
 * owner that does not exist would let the garbage collector delete the pod at once) and labelled as a
 * khjob's, for the admission policies. Pure: the pod is not modified.
 */
export function asJobPod(pod: V1Pod, job: KhJob): V1Pod {
  const owners = (pod.metadata?.ownerReferences ?? []).map((o) =>
    o.uid === job.metadata.uid ? { ...o, apiVersion: `${KH_GROUP}/${KH_VERSION}`, kind: KHJOB_KIND } : o,
  );
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      labels: { ...pod.metadata?.labels, [WORKLOAD_LABEL]: KHJOB_WORKLOAD },
      ownerReferences: owners,
    },
  };
}
