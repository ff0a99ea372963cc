import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { KhStateStore } from '../kube/cas.ts';
import type { PodRemoval } from '../kube/pod-removal.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
import type { KuberhealthyInstall, TakeoverRecord } from './installations.ts';

/**
 * The checks' states a Kuberhealthy line keeps, as takeover and handback see them: v2's khstates, or v3's
 * HealthChecks seen as khstates (lib/healthcheck's state view, which shows a run v3 has in flight as held
 * by foreignRunner).
 */
export interface TakeoverStates extends KhStateStore {
  listStates(): Promise<KhState[]>;
  /** Resolves with the first value decide returns over the watched states; rejects at the deadline. */
  waitForStates<R>(
    decide: (states: KhState[]) => R | undefined,
    opts: { timeoutMs: number; signal: AbortSignal; description: string },
  ): Promise<R>;
  listCheckPods(namespace: string, checkName: string): Promise<V1Pod[]>;
  removePod(namespace: string, name: string, uid?: string): Promise<PodRemoval>;
  /** The holder shown for a run that no runner of khrun's holds (v3's own): takeover closes such a run. */
  readonly foreignRunner?: string;
}

/**
 * What `khrun takeover` and `khrun handback` need from the API server (the real one is kube-takeover.ts).
 * These run with the operator's credentials, not the runner's: scaling another namespace's Deployment is
 * theirs to do. The states of v2's khchecks are the port itself; v3's are healthChecks.
 */
export interface TakeoverKube extends TakeoverStates {
  /** Every Deployment in the cluster: Kuberhealthy is found by its pod template (installations.ts). */
  listDeployments(): Promise<V1Deployment[]>;
  /** Sets spec.replicas and the takeover record (null removes it) in one write. */
  scale(install: KuberhealthyInstall, replicas: number, record: TakeoverRecord | null): Promise<void>;
  /** Resolves once no pod of the install is left (watched, not polled); rejects at the deadline. */
  waitForPodsGone(
    install: KuberhealthyInstall,
    opts: { timeoutMs: number; signal: AbortSignal },
  ): Promise<void>;
  listChecks(): Promise<KhCheck[]>;
  /** HealthChecks as states, for a v3 install; absent: takeover refuses v3 (exit 2), leaving it running. */
  healthChecks?: TakeoverStates;
}
