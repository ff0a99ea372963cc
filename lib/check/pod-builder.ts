import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { KH_GROUP, KH_VERSION, type ValidCheck } from '../state/resources.ts';

/**
 * Names Kuberhealthy v2 puts on every checker pod. Check images, the report endpoint, reapers and dashboards
 * key on them, so they are part of the contract and must not change.
 */
export const RUN_ID_LABEL = 'kuberhealthy-run-id' as const;
export const CHECK_NAME_LABEL = 'kuberhealthy-check-name' as const;
export const APP_LABEL = 'app' as const;
export const APP_LABEL_VALUE = 'kuberhealthy-check' as const;
export const CHECKER_POD_CHECK_ANNOTATION = 'comcast.github.io/check-name' as const;

/** Environment variables injected into the checker pod, in the order v2 appends them. */
export const KH_ENV = {
  reportingUrl: 'KH_REPORTING_URL',
  runUuid: 'KH_RUN_UUID',
  deadline: 'KH_CHECK_RUN_DEADLINE',
  podNamespace: 'KH_POD_NAMESPACE',
} as const;

const INJECTED_ENV_NAMES: ReadonlySet<string> = new Set(Object.values(KH_ENV));

export interface CheckerPodInput {
  check: ValidCheck;
  /** The run's fencing token; also written to khstate `spec.uuid` before the pod is created. */
  runUuid: string;
  reportingUrl: string;
  deadlineEpochMs: number;
  nowEpochMs: number;
}

/** v2's pod name: `lower(<check>-<unix seconds>)`, so a new run gets a new name once a second has passed. */
export function podNameFor(checkName: string, nowEpochMs: number): string {
  return `${checkName}-${Math.floor(nowEpochMs / 1000)}`.toLowerCase();
}

/**
 * The name a run's pod takes when its first name (podNameFor) is held by an older run's pod (two runs in
 * one second): the first name and the run UUID's first 8 characters, so whoever knows the run finds its
 * pod without listing pods.
 */
export function retryPodName(firstName: string, runUuid: string): string {
  return `${firstName}-${runUuid.slice(0, 8)}`.toLowerCase();
}

/**
 * Replaces (never merges with) any user-set variable of the same name, so a check cannot report with another
 * run's UUID or a wrong URL, and appends ours last.
 */
function withInjectedEnv(container: V1Container, injected: V1EnvVar[]): V1Container {
  const own = (container.env ?? []).filter((entry) => !INJECTED_ENV_NAMES.has(entry.name));
  return { ...container, env: [...own, ...injected.map((entry) => structuredClone(entry))] };
}

/**
 * The checker pod for one run, as Kuberhealthy v2 builds it, with two deliberate differences: the variables
 * also go into init containers (so an init step can report or read its deadline), and the owner is the
 * khcheck, so deleting a check deletes its pods. Pure: the check's pod spec is deep-copied, never aliased.
 */
export function buildCheckerPod(input: CheckerPodInput): V1Pod {
  const { check, runUuid, reportingUrl, deadlineEpochMs, nowEpochMs } = input;
  const { extraLabels, extraAnnotations, podSpec } = check.source.spec;

  const injected: V1EnvVar[] = [
    { name: KH_ENV.reportingUrl, value: reportingUrl },
    { name: KH_ENV.runUuid, value: runUuid },
    // Unix seconds, as `GetDeadline` in v2's checkclient reads it with strconv.Atoi.
    { name: KH_ENV.deadline, value: String(Math.floor(deadlineEpochMs / 1000)) },
    { name: KH_ENV.podNamespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];

  const spec = structuredClone(podSpec);
  spec.containers = spec.containers.map((container) => withInjectedEnv(container, injected));
  if (spec.initContainers) {
    spec.initContainers = spec.initContainers.map((container) => withInjectedEnv(container, injected));
  }
  spec.restartPolicy = 'Never';

  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameFor(check.name, nowEpochMs),
      namespace: check.namespace,
      // Spread order matters: ours win over the user's extras, as in v2's addKuberhealthyLabels.
      labels: {
        ...extraLabels,
        [RUN_ID_LABEL]: runUuid,
        [CHECK_NAME_LABEL]: check.name,
        [APP_LABEL]: APP_LABEL_VALUE,
      },
      annotations: { ...extraAnnotations, [CHECKER_POD_CHECK_ANNOTATION]: check.name },
      ownerReferences: [
        {
          apiVersion: `${KH_GROUP}/${KH_VERSION}`,
          kind: 'KuberhealthyCheck',
          name: check.name,
          uid: check.uid,
          controller: false,
          blockOwnerDeletion: false,
        },
      ],
    },
    spec,
  };
}
