import { setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL } from '../check/pod-builder.ts';
import { isRunPod, runPodsSelector } from '../check/run-label.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhCheck,
  type KhState,
} from '../state/resources.ts';
import { createPodOnce } from './create-pod.ts';
import { classifyApiError, isNotFound, WriteConflict } from './errors.ts';
import { ahead, behind, type KubeClient } from './kube-client.ts';
import { runListWatch } from './list-watch.ts';
import { deletePodGracefully, type PodRemoval } from './pod-removal.ts';
import type { KubePort, ListedPods } from './port.ts';
import { isTooManyRequests, retryTransient, THROTTLED_MS } from './transient.ts';

const co = { group: KH_GROUP, version: KH_VERSION };

/** The user agent of a khstate write: `khrun/<writer>`, so the audit log tells the loops apart. */
export const writerAgent = (writer: string | undefined) =>
  writer ? setHeaderOptions('User-Agent', `khrun/${writer}`) : undefined;

/** A check's checker pods: the kuberhealthy-check-name label. */
const checkPodsSelector = (checkName: string) => `${CHECK_NAME_LABEL}=${checkName}`;

function conflictOr(error: unknown): never {
  const kind = classifyApiError(error);
  if (kind === 'Conflict' || kind === 'AlreadyExists') throw new WriteConflict(kind, { cause: error });
  throw error;
}

/** A write sent again only after a 429 (the API server did nothing); a 5xx may have landed and is thrown. */
const unlessRefused = <T>(write: () => Promise<T>) =>
  retryTransient(write, {
    retryOn: isTooManyRequests,
    totalMs: 30_000,
    throttledMs: THROTTLED_MS,
    minAttempts: 3,
  });
/** A read tried again after a 429 (for five minutes, THROTTLED_MS) or a 5xx (for 15 s). */
const read = <T>(fn: () => Promise<T>) => retryTransient(fn, { throttledMs: THROTTLED_MS });

/** KubePort over the real API server: one request per call, watches for waiting. */
export function kubePort(client: KubeClient): KubePort {
  // Every response feeds the client's API server clock the engines decide by (kube/server-clock.ts).
  const { core, custom } = client;
  // A lease renewal goes ahead of the requests waiting for the client's bound, a claim behind them
  // (kube-client.ts, ahead and behind): the runs already claimed finish before more start.
  const leaseCustom = ahead(client).custom;
  const claimCustom = behind(client).custom;
  const stateWriter = (writer: string | undefined) =>
    writer === 'lease' ? leaseCustom : writer === 'claim' ? claimCustom : custom;
  // Reads are tried again after a 5xx (kube/transient.ts), for up to 15 s with backoff (after a 429 for
  // five minutes): a read changes nothing, and a batch runner's 25 first reads at once should not fail 25
  // checks over one overloaded moment of the API server. Writes only after a 429 (unlessRefused): a write
  // that timed out may have landed, and the CAS callers decide what a conflict means; a pod create has its
  // own read-back (create-pod.ts).
  const orNull = async <T>(fetch: () => Promise<T>): Promise<T | null> => {
    try {
      return await read(fetch);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  };
  async function listCheckPodsAt(namespace: string, checkName: string): Promise<ListedPods> {
    const list = await read(() =>
      core.listNamespacedPod({ namespace, labelSelector: checkPodsSelector(checkName) }),
    );
    return { pods: list.items, resourceVersion: list.metadata?.resourceVersion };
  }
  return {
    readCheck: (namespace, name) =>
      orNull(
        () =>
          custom.getNamespacedCustomObject({
            ...co,
            plural: KHCHECK_PLURAL,
            namespace,
            name,
          }) as Promise<KhCheck>,
      ),
    readState: (namespace, name) =>
      orNull(
        () =>
          custom.getNamespacedCustomObject({
            ...co,
            plural: KHSTATE_PLURAL,
            namespace,
            name,
          }) as Promise<KhState>,
      ),
    async createState(state, writer) {
      try {
        return (await unlessRefused(() =>
          stateWriter(writer).createNamespacedCustomObject(
            { ...co, plural: KHSTATE_PLURAL, namespace: state.metadata.namespace, body: state },
            writerAgent(writer),
          ),
        )) as KhState;
      } catch (error) {
        return conflictOr(error);
      }
    },
    async replaceState(state, writer) {
      try {
        return (await unlessRefused(() =>
          stateWriter(writer).replaceNamespacedCustomObject(
            {
              ...co,
              plural: KHSTATE_PLURAL,
              namespace: state.metadata.namespace,
              name: state.metadata.name,
              body: state,
            },
            writerAgent(writer),
          ),
        )) as KhState;
      } catch (error) {
        return conflictOr(error);
      }
    },
    async deleteState(namespace, name, resourceVersion) {
      await custom.deleteNamespacedCustomObject({
        ...co,
        plural: KHSTATE_PLURAL,
        namespace,
        name,
        body: { preconditions: { resourceVersion } },
      });
    },
    async listCheckPods(namespace, checkName) {
      return (await listCheckPodsAt(namespace, checkName)).pods;
    },
    listCheckPodsAt,
    async createPod(pod) {
      try {
        return await createPodOnce(core, pod);
      } catch (error) {
        return conflictOr(error);
      }
    },
    // A graceful delete, never an eviction: pod-removal.ts says why.
    removePod: (namespace, name, uid): Promise<PodRemoval> => deletePodGracefully(core, namespace, name, uid),
    async watchRun({ namespace, checkName, runUuid, signal, onChange, onInterruption, ...how }) {
      const watchState = how.watchState ?? true;
      // From a list of the check's pods (check-name label): the same selector, the run's pods picked here.
      const from = how.podsFrom?.resourceVersion
        ? { items: how.podsFrom.pods, resourceVersion: how.podsFrom.resourceVersion }
        : undefined;
      let pods: V1Pod[] = [];
      let state: KhState | null = null;
      let podsReady = false;
      let stateReady = !watchState;
      const emit = () => {
        if (podsReady && stateReady) onChange({ pods, state });
      };
      await Promise.all([
        runListWatch<V1Pod>({
          kc: client,
          path: `/api/v1/namespaces/${namespace}/pods`,
          labelSelector: from ? checkPodsSelector(checkName) : runPodsSelector(runUuid),
          from,
          signal,
          onInterruption,
          onChange: (items) => {
            pods = [...items.values()].filter((p) => isRunPod(p, runUuid));
            podsReady = true;
            emit();
          },
        }),
        watchState &&
          runListWatch<KhState>({
            kc: client,
            path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`,
            fieldSelector: `metadata.name=${checkName}`,
            signal,
            onInterruption,
            onChange: (items) => {
              state = items.values().next().value ?? null;
              stateReady = true;
              emit();
            },
          }),
      ]);
    },
  };
}
