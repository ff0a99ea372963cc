import { deletePath, type FieldPath, getPath } from './field-path.ts';
import type { Finding } from './findings.ts';

/**
 * The PodSpec fields v3.0.0's HealthCheck schema has (spec.podSpec.spec) and v2.7.1's khcheck and khjob
 * schemas (spec.podSpec) do not, as the outermost such field; `[]` stands for every item of a list. The
 * API server prunes them from a khcheck, so they cannot reach Kuberhealthy v2. v2's schema has no field
 * v3's lacks. Derived from the two CRDs (test/fixtures/kuberhealthy); test/unit/convert-pod-fields.test.ts
 * derives it again and fails when the list and the CRDs part.
 */
export const V3_ONLY_POD_FIELDS: readonly string[] = [
  'affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.matchLabelKeys',
  'affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.mismatchLabelKeys',
  'affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].matchLabelKeys',
  'affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].mismatchLabelKeys',
  'affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.matchLabelKeys',
  'affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.mismatchLabelKeys',
  'affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].matchLabelKeys',
  'affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].mismatchLabelKeys',
  'containers[].lifecycle.postStart.sleep',
  'containers[].lifecycle.preStop.sleep',
  'containers[].livenessProbe.grpc',
  'containers[].readinessProbe.grpc',
  'containers[].resizePolicy',
  'containers[].resources.claims',
  'containers[].restartPolicy',
  'containers[].securityContext.appArmorProfile',
  'containers[].securityContext.windowsOptions.hostProcess',
  'containers[].startupProbe.grpc',
  'containers[].volumeMounts[].recursiveReadOnly',
  'ephemeralContainers[].lifecycle.postStart.sleep',
  'ephemeralContainers[].lifecycle.preStop.sleep',
  'ephemeralContainers[].livenessProbe.grpc',
  'ephemeralContainers[].readinessProbe.grpc',
  'ephemeralContainers[].resizePolicy',
  'ephemeralContainers[].resources.claims',
  'ephemeralContainers[].restartPolicy',
  'ephemeralContainers[].securityContext.appArmorProfile',
  'ephemeralContainers[].securityContext.windowsOptions.hostProcess',
  'ephemeralContainers[].startupProbe.grpc',
  'ephemeralContainers[].volumeMounts[].recursiveReadOnly',
  'hostUsers',
  'initContainers[].lifecycle.postStart.sleep',
  'initContainers[].lifecycle.preStop.sleep',
  'initContainers[].livenessProbe.grpc',
  'initContainers[].readinessProbe.grpc',
  'initContainers[].resizePolicy',
  'initContainers[].resources.claims',
  'initContainers[].restartPolicy',
  'initContainers[].securityContext.appArmorProfile',
  'initContainers[].securityContext.windowsOptions.hostProcess',
  'initContainers[].startupProbe.grpc',
  'initContainers[].volumeMounts[].recursiveReadOnly',
  'os',
  'resourceClaims',
  'schedulingGates',
  'securityContext.appArmorProfile',
  'securityContext.windowsOptions.hostProcess',
  'topologySpreadConstraints[].matchLabelKeys',
  'topologySpreadConstraints[].minDomains',
  'topologySpreadConstraints[].nodeAffinityPolicy',
  'topologySpreadConstraints[].nodeTaintsPolicy',
  'volumes[].ephemeral.volumeClaimTemplate.spec.dataSourceRef',
  'volumes[].ephemeral.volumeClaimTemplate.spec.volumeAttributesClassName',
  'volumes[].projected.sources[].clusterTrustBundle',
];

function expand(pod: unknown, pattern: readonly string[], at: FieldPath): FieldPath[] {
  const [head, ...rest] = pattern;
  if (head === undefined) return getPath(pod, at) === undefined ? [] : [at];
  if (head === '[]') {
    const list = getPath(pod, at);
    return Array.isArray(list) ? list.flatMap((_, i) => expand(pod, rest, [...at, i])) : [];
  }
  return expand(pod, rest, [...at, head]);
}

/** `containers[].restartPolicy` → `['containers', '[]', 'restartPolicy']`. */
const segments = (pattern: string) => pattern.replaceAll('[]', '.[]').split('.');

const REASON = {
  'to-v2': "not in Kuberhealthy v2.7.1's podSpec schema (a newer Kubernetes field): the API server prunes it",
  'to-v3':
    "not in Kuberhealthy v2.7.1's podSpec schema: the API server pruned it from the khcheck, so v2 never used it; it is not carried into the HealthCheck",
} as const;

/**
 * Removes from a PodSpec (mutated) every field v2.7.1's schema lacks, one `lost` finding each, reported
 * at `base` + the field's path (the input's own path to the PodSpec). Every pattern ends in a named field,
 * so removing one never shifts the index of another.
 */
export function dropV3OnlyPodFields(
  pod: unknown,
  base: FieldPath,
  direction: keyof typeof REASON,
): Finding[] {
  const found = V3_ONLY_POD_FIELDS.flatMap((pattern) => expand(pod, segments(pattern), []));
  for (const path of found) deletePath(pod, path);
  return found.map((path) => ({ effect: 'lost', field: [...base, ...path], reason: REASON[direction] }));
}
