import type { V1Pod } from '@kubernetes/client-node';
import type { KhCheck, KhState } from '../state/resources.ts';
import type { PodRemoval } from './pod-removal.ts';

/**
 * What a khstate write does, as its caller declares it: 'claim' takes the check's run slot for this
 * invocation (a new run, an adopted one, or a stale run closed and a new one claimed in the same write);
 * 'update' (the default) is any other write. An adapter that acts on a write (a khjob moves to Running
 * once its run is claimed) reads this, never the writer, which only names the loop for the audit log.
 */
export type StateWriteIntent = 'claim' | 'update';

/** A check's pods as one list returned them, and the resourceVersion that list is current at. */
export interface ListedPods {
  pods: V1Pod[];
  /** Undefined where the port cannot say (a watch then lists for itself). */
  resourceVersion: string | undefined;
}

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
   * log attributes each attempt to its loop (audit only: adapters decide on intent, never on writer).
   */
  createState(state: KhState, writer?: string, intent?: StateWriteIntent): Promise<KhState>;
  /** Replaces the khstate with metadata.resourceVersion as precondition; throws WriteConflict on 409. */
  replaceState(state: KhState, writer?: string, intent?: StateWriteIntent): Promise<KhState>;
  deleteState(namespace: string, name: string, resourceVersion: string): Promise<void>;
  /** Checker pods of a check, by the kuberhealthy-check-name label. */
  listCheckPods(namespace: string, checkName: string): Promise<V1Pod[]>;
  /** The same list with its resourceVersion, so a watch of the run's pods can start from it (podsFrom). */
  listCheckPodsAt(namespace: string, checkName: string): Promise<ListedPods>;
  /** Creates the pod; throws WriteConflict when the name is taken. */
  createPod(pod: V1Pod): Promise<V1Pod>;
  /**
   * Deletes a checker pod gracefully (its own grace period), never by eviction (kube/pod-removal.ts says
   * why). A refused delete (403, 429) keeps the pod: the result says so (`kept`), for the caller to log and
   * a later clean-up to retry. A missing pod is `gone`. With uid, only that very pod: a pod of the same name
   * created since (a replacement) is left alone.
   */
  removePod(namespace: string, name: string, uid?: string): Promise<PodRemoval>;
  /**
   * Watches the run's pods (run-id label) and the khstate, calling onChange with both on every change,
   * until the signal aborts. Reconnects by itself; onInterruption tells the driver the view may be stale.
   * Without watchState the khstate is not watched (the view's state is null). With podsFrom (a list of the
   * check's pods, plus any created since), the pods are watched from that list's resourceVersion instead of
   * listed again: one request fewer. A port may ignore both and watch as it always does.
   */
  watchRun(opts: {
    namespace: string;
    checkName: string;
    runUuid: string;
    signal: AbortSignal;
    watchState?: boolean;
    podsFrom?: ListedPods;
    onChange: (view: { pods: V1Pod[]; state: KhState | null }) => void;
    onInterruption?: (reason: string) => void;
  }): Promise<void>;
}
