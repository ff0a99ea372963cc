import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import { APP_LABEL, APP_LABEL_VALUE, CHECK_NAME_LABEL, RUN_ID_LABEL } from '../check/pod-builder.ts';
import { runIdOf } from '../check/run-label.ts';
import { KH_GROUP, KH_VERSION } from '../state/resources.ts';
import { HC_API_VERSION, HC_KIND, HC_POD, type HealthCheck } from './resources.ts';

/**
 * Checker pods of HealthChecks, both ways. In the cluster a pod carries v3's contract only (what v3's
 * `CheckPodSpec` puts on it), plus one annotation saying khrun made it. lib/run sees the same pod in khrun's
 * own contract (run-id and check-name labels, owner = the check), so the run engine is the same for both
 * kinds; the view exists only in memory.
 */

/** Marks the pods khrun created: v3's controller makes pods with the same labels, which khrun never removes. */
export const KHRUN_POD_ANNOTATION = 'khrun.dev/checker-pod';

/** Go's `time.Time.String()` of a unix second in UTC, as v3 writes the createdTime annotation. */
export function goTimeString(unixSeconds: number): string {
  const iso = new Date(unixSeconds * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} +0000 UTC`;
}

/**
 * v3's pod name, `<check>-<first 5 characters of a UUID>`: here of the run's UUID. A second name tried
 * for the same run (the first was taken) keeps khrun's suffix so it differs.
 */
export function v3PodName(builtName: string, checkName: string, runUuid: string): string {
  const rest = builtName.startsWith(`${checkName}-`) ? builtName.slice(checkName.length + 1) : '';
  const retry = rest.includes('-') ? rest.slice(rest.indexOf('-')) : '';
  return `${checkName}-${runUuid.slice(0, 5)}${retry}`.toLowerCase();
}

/**
 * The pod khrun's builder made, as v3 makes it for hc: labels `healthcheck` and `kh-run-uuid` over the pod
 * metadata and extras, annotations `createdBy`, `kh-run-uuid`, `createdTime`, `kuberhealthyCheckName`, a
 * controller ownerReference to the HealthCheck, and the HealthCheck's own restartPolicy (v3 does not force
 * Never). The env the builder injected (containers and init containers) is v3's already. Pure.
 */
export function toV3Pod(pod: V1Pod, hc: HealthCheck, runStartUnix: number): V1Pod {
  const name = hc.metadata.name;
  const runUuid = runIdOf(pod) ?? '';
  const podMeta = hc.spec.podSpec?.metadata ?? {};
  const spec = { ...pod.spec, containers: pod.spec?.containers ?? [] };
  const restartPolicy = hc.spec.podSpec?.spec?.restartPolicy;
  if (restartPolicy) spec.restartPolicy = restartPolicy;
  else delete spec.restartPolicy;
  const metadata: V1ObjectMeta = {
    name: v3PodName(pod.metadata?.name ?? name, name, runUuid),
    namespace: hc.metadata.namespace,
    labels: {
      ...podMeta.labels,
      ...hc.spec.extraLabels,
      [HC_POD.checkLabel]: name,
      [HC_POD.runUuidLabel]: runUuid,
    },
    annotations: {
      ...podMeta.annotations,
      ...hc.spec.extraAnnotations,
      [HC_POD.createdByAnnotation]: HC_POD.createdByValue,
      [HC_POD.runUuidAnnotation]: runUuid,
      [HC_POD.createdTimeAnnotation]: goTimeString(runStartUnix),
      [HC_POD.checkNameAnnotation]: name,
      [KHRUN_POD_ANNOTATION]: 'true',
    },
    ownerReferences: [
      {
        apiVersion: HC_API_VERSION,
        kind: HC_KIND,
        name,
        uid: hc.metadata.uid ?? '',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec };
}

/**
 * A HealthCheck's pod as lib/run reads pods: khrun's run-id and check-name labels from v3's, and, for a pod
 * khrun made, the owner lib/run recognises as its own (pod-hygiene's isKhrunCheckerPod). A pod of v3's
 * controller gets no such owner, so khrun never removes it. Pure; the input is not modified.
 */
export function podViewOf(pod: V1Pod): V1Pod {
  const labels = pod.metadata?.labels ?? {};
  const check = labels[HC_POD.checkLabel] ?? '';
  const ours = pod.metadata?.annotations?.[KHRUN_POD_ANNOTATION] === 'true';
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      labels: {
        ...labels,
        [RUN_ID_LABEL]: labels[HC_POD.runUuidLabel] ?? '',
        [CHECK_NAME_LABEL]: check,
        ...(ours ? { [APP_LABEL]: APP_LABEL_VALUE } : {}),
      },
      ownerReferences: ours
        ? [
            {
              apiVersion: `${KH_GROUP}/${KH_VERSION}`,
              kind: 'KuberhealthyCheck',
              name: check,
              uid: pod.metadata?.ownerReferences?.[0]?.uid ?? '',
            },
          ]
        : (pod.metadata?.ownerReferences ?? []),
    },
  };
}
