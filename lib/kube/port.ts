import type { V1Pod } from '@kubernetes/client-node';
import type { KhCheck, KhState } from '../state/resources.ts';
import type { PodRemoval } from './eviction-fallback.ts';

/**
 * The Kubernetes operations one iteration needs, shaped like the domain. The real one talks to the API
 * server (kube-port.ts); the driver's unit tests pass a fake.
 */
export interface KubePort {
  readCheck(namespace: string, name: string): Promise<KhCheck | null>;
  readState(namespace: string, name: string): Promise<KhState | null>;
  /**
   * Creates the khstate; throws WriteConflict when it already exists. writer names the loop that writes
   * ('claim', 'record', 'report', ...); it travels as the request's user agent, so the API server's audit
   * log attributes each attempt to its loop.
   */
  createState(state: KhState, writer?: string): Promise<KhState>;
  /** Replaces the khstate with metadata.resourceVersion as precondition; throws WriteConflict on 409. */
  replaceState(state: KhState, writer?: string): Promise<KhState>;
  deleteState(namespace: string, name: string, resourceVersion: string): Promise<void>;
  /** Checker pods of a check, by the kuberhealthy-check-name label. */
  listCheckPods(namespace: string, checkName: string): Promise<V1Pod[]>;
  /** Creates the pod; throws WriteConflict when the name is taken. */
  createPod(pod: V1Pod): Promise<V1Pod>;
  /**
   * Evicts a pod (respecting disruption budgets); deletes it instead only where the API server does not
   * serve eviction. A budget's 429 or a forbidden eviction (403) keeps the pod: the result says so
   * (`kept`), for the caller to log and a later clean-up to retry. A missing pod is `gone`. With uid, only
   * that very pod: a pod of the same name created since (a replacement) is left alone.
   */
  removePod(namespace: string, name: string, uid?: string): Promise<PodRemoval>;
  /**
   * Watches the run's pods (run-id label) and the khstate, calling onChange with both on every change,
   * until the signal aborts. Reconnects by itself; onInterruption tells the driver the view may be stale.
   */
  watchRun(opts: {
    namespace: string;
    checkName: string;
    runUuid: string;
    signal: AbortSignal;
    onChange: (view: { pods: V1Pod[]; state: KhState | null }) => void;
    onInterruption?: (reason: string) => void;
  }): Promise<void>;
}
