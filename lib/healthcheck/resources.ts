import type { V1ObjectMeta, V1PodSpec } from '@kubernetes/client-node';

/**
 * API coordinates of Kuberhealthy v3's one resource (v3.0.0 `pkg/api`, CRD
 * `healthchecks.kuberhealthy.github.io`). The group is v3's, the version is called v2 upstream.
 */
export const HC_GROUP = 'kuberhealthy.github.io';
export const HC_VERSION = 'v2';
export const HC_API_VERSION = `${HC_GROUP}/${HC_VERSION}` as const;
export const HC_KIND = 'HealthCheck';
export const HC_PLURAL = 'healthchecks';

/** v3.0.0's defaults (`defaultRunTimeout`, `defaultRunInterval` in internal/kuberhealthy). */
export const HC_DEFAULT_TIMEOUT = '30s';
export const HC_DEFAULT_RUN_INTERVAL = '10m';

/** `CheckPodSpec`: v3 wraps the pod spec with optional pod metadata (v2 put the PodSpec directly). */
export interface HealthCheckPodSpec {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: V1PodSpec;
}

/** `HealthCheckSpec`: durations are Go duration strings (`metav1.Duration`). */
export interface HealthCheckSpec {
  singleRunOnly?: boolean;
  runInterval?: string;
  timeout?: string;
  extraAnnotations?: Record<string, string>;
  extraLabels?: Record<string, string>;
  podSpec: HealthCheckPodSpec;
}

/**
 * `HealthCheckStatus` as v3 serialises it: every field but `ok` and `currentUUID` is `omitempty` (absent
 * when zero), `currentUUID` is always written (`""` = idle: v3's run lock), `runDuration` is a Go
 * `time.Duration` (int64 nanoseconds), the `*Unix` fields are unix seconds. `consecutiveFailures` is in the
 * Go type but not in the CRD schema, so the API server prunes it; it is listed only to be read if present.
 */
export interface HealthCheckStatus {
  ok: boolean;
  errors?: string[];
  consecutiveFailures?: number;
  runDuration?: number;
  namespace?: string;
  currentUUID: string;
  lastRunUnix?: number;
  successCount?: number;
  failureCount?: number;
  lastOKUnix?: number;
  lastFailureUnix?: number;
  additionalMetadata?: string;
}

export interface HealthCheck {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec: HealthCheckSpec;
  status?: HealthCheckStatus;
}

/** Labels and annotations v3's `CheckPodSpec` puts on every checker pod. */
export const HC_POD = {
  checkLabel: 'healthcheck',
  runUuidLabel: 'kh-run-uuid',
  createdByAnnotation: 'createdBy',
  createdByValue: 'kuberhealthy',
  runUuidAnnotation: 'kh-run-uuid',
  createdTimeAnnotation: 'createdTime',
  checkNameAnnotation: 'kuberhealthyCheckName',
} as const;

/** The report path v3's checkclient insists on (`KH_REPORTING_URL` must end in exactly this path). */
export const HC_REPORT_PATH = '/check';
/** The header v3's checkclient sends the run's UUID in. */
export const HC_RUN_UUID_HEADER = 'kh-run-uuid';
