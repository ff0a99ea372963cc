import type { V1Pod } from '@kubernetes/client-node';
import { classifyApiError, isNotFound, WriteConflict } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { kubePort, writerAgent } from '../kube/kube-port.ts';
import { runListWatch } from '../kube/list-watch.ts';
import type { KubePort } from '../kube/port.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from './resources.ts';

interface WatchOpts {
  namespace: string;
  signal: AbortSignal;
  onInterruption?: (reason: string) => void;
}

/**
 * The API requests the HealthCheck port makes, one method per request: the seam the driver's unit tests
 * replace with an in-memory server. Both replaces carry metadata.resourceVersion as their precondition
 * and throw WriteConflict on 409; the status one goes to the status subresource, which takes only status.
 */
export interface HealthCheckApi extends Pick<KubePort, 'createPod' | 'removePod'> {
  get(namespace: string, name: string): Promise<HealthCheck | null>;
  /** The HealthChecks of one namespace, or of all (undefined). */
  list(namespace?: string): Promise<HealthCheck[]>;
  replace(hc: HealthCheck, writer?: string): Promise<HealthCheck>;
  replaceStatus(hc: HealthCheck, writer?: string): Promise<HealthCheck>;
  listPods(namespace: string, labelSelector: string): Promise<V1Pod[]>;
  watchPods(opts: WatchOpts & { labelSelector: string; onChange: (pods: V1Pod[]) => void }): Promise<void>;
  watchCheck(opts: WatchOpts & { name: string; onChange: (hc: HealthCheck | null) => void }): Promise<void>;
}

function conflictOr(error: unknown): never {
  const kind = classifyApiError(error);
  if (kind === 'Conflict' || kind === 'AlreadyExists') throw new WriteConflict(kind, { cause: error });
  throw error;
}

const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };

/** HealthCheckApi over the real API server; pods as the khcheck port handles them (kube-port.ts). */
export function healthCheckApi(client: KubeClient): HealthCheckApi {
  const core = client.core;
  const custom = client.custom;
  const pods = kubePort(client);
  const target = (hc: HealthCheck) => ({
    ...co,
    namespace: hc.metadata.namespace,
    name: hc.metadata.name,
    body: hc,
  });
  return {
    async get(namespace, name) {
      try {
        return (await custom.getNamespacedCustomObject({ ...co, namespace, name })) as HealthCheck;
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async list(namespace) {
      const list = (await (namespace === undefined
        ? custom.listClusterCustomObject(co)
        : custom.listNamespacedCustomObject({ ...co, namespace }))) as { items: HealthCheck[] };
      return list.items;
    },
    replace: (hc, writer) =>
      (custom.replaceNamespacedCustomObject(target(hc), writerAgent(writer)) as Promise<HealthCheck>).catch(
        conflictOr,
      ),
    replaceStatus: (hc, writer) =>
      (
        custom.replaceNamespacedCustomObjectStatus(target(hc), writerAgent(writer)) as Promise<HealthCheck>
      ).catch(conflictOr),
    async listPods(namespace, labelSelector) {
      return (await core.listNamespacedPod({ namespace, labelSelector })).items;
    },
    createPod: pods.createPod,
    removePod: pods.removePod,
    watchPods: ({ namespace, labelSelector, signal, onInterruption, onChange }) =>
      runListWatch<V1Pod>({
        kc: client,
        path: `/api/v1/namespaces/${namespace}/pods`,
        labelSelector,
        signal,
        onInterruption,
        onChange: (items) => onChange([...items.values()]),
      }),
    watchCheck: ({ namespace, name, signal, onInterruption, onChange }) =>
      runListWatch<HealthCheck>({
        kc: client,
        path: `/apis/${HC_GROUP}/${HC_VERSION}/namespaces/${namespace}/${HC_PLURAL}`,
        fieldSelector: `metadata.name=${name}`,
        signal,
        onInterruption,
        onChange: (items) => onChange(items.values().next().value ?? null),
      }),
  };
}
