import type { V1Pod } from '@kubernetes/client-node';
import { RUN_ID_LABEL } from './pod-builder.ts';

/** The run a checker pod was created for (its run-id label), undefined on a pod without one. */
export const runIdOf = (pod: V1Pod): string | undefined => pod.metadata?.labels?.[RUN_ID_LABEL];

/** Whether the pod was created for this run (its run-id label names it). */
export const isRunPod = (pod: V1Pod, runUuid: string): boolean => runIdOf(pod) === runUuid;

/** The label selector that lists one run's pods (its value is a report credential: never log it). */
export const runPodsSelector = (runUuid: string): string => `${RUN_ID_LABEL}=${runUuid}`;
