import type { V1ObjectMeta, V1PodSpec } from '@kubernetes/client-node';

/** API coordinates of Kuberhealthy v2's resources; existing YAMLs and readers key on them. */
export const KH_GROUP = 'comcast.github.io';
export const KH_VERSION = 'v1';
export const KHCHECK_PLURAL = 'khchecks';
export const KHSTATE_PLURAL = 'khstates';

/** `KuberhealthyCheck` as v2.7 stores it: the pod spec sits directly under `spec.podSpec`. */
export interface KhCheck {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec: {
    runInterval: string;
    timeout: string;
    podSpec: V1PodSpec;
    extraAnnotations?: Record<string, string>;
    extraLabels?: Record<string, string>;
  };
}

/**
 * The khstate spec with v2's exact casing. Every required field is always written: the v2.7 schema
 * prunes unknown fields and rejects a missing required one.
 */
export interface KhStateSpec {
  OK: boolean;
  Errors: string[];
  RunDuration: string;
  Namespace: string;
  Node: string;
  LastRun?: string | null;
  AuthoritativePod: string;
  uuid: string;
}

export interface KhState {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec: KhStateSpec;
}

/** A khcheck whose spec parsed; durations in milliseconds. */
export interface ValidCheck {
  name: string;
  namespace: string;
  uid: string;
  runIntervalMs: number;
  timeoutMs: number;
  source: KhCheck;
}
