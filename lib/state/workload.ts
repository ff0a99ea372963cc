import type { KhState } from './resources.ts';

/**
 * Which kind of Kuberhealthy workload a khstate (and a checker pod) belongs to. v2's khstate has a
 * `khWorkload` field that is never serialized (unexported in Go), so v2 tells a khjob's khstate from a
 * khcheck's by looking both objects up on every status request. khrun labels what it writes for a khjob
 * instead: the status page then sorts khstates into CheckDetails and JobDetails from the khstates alone,
 * and the admission policies select a khjob's checker pods by this label.
 */
export const WORKLOAD_LABEL = 'khrun.dev/workload' as const;
/** v2's name for the run-once workload (khstatev1.KHJob). */
export const KHJOB_WORKLOAD = 'KHJob' as const;

/** Whether a khstate is a khjob's (written by khrun's khjob runner). */
export function isJobState(state: KhState): boolean {
  return state.metadata.labels?.[WORKLOAD_LABEL] === KHJOB_WORKLOAD;
}

/** The khstate labelled as a khjob's; everything else kept (resourceVersion too, as the precondition). */
export function labelledAsJob(state: KhState): KhState {
  return {
    ...state,
    metadata: { ...state.metadata, labels: { ...state.metadata.labels, [WORKLOAD_LABEL]: KHJOB_WORKLOAD } },
  };
}
