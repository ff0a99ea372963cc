import { type KubeConfig, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../../../../lib/kube/errors.ts';
import { kubeClient } from '../../../../../lib/kube/kube-client.ts';

/** What the pod side of the kubelet needs from the API server: a narrow port, faked in unit tests. */
export interface KubeletApi {
  /** A ConfigMap's data and binaryData as bytes; undefined when it does not exist. */
  readConfigMap(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
  /** A Secret's data as bytes; undefined when it does not exist. */
  readSecret(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
  /** A ServiceAccount token bound to the pod (TokenRequest API). */
  requestToken(opts: {
    namespace: string;
    serviceAccount: string;
    audience?: string;
    expirationSeconds: number;
    pod: { name: string; uid: string };
  }): Promise<string>;
  readPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  /** PUT of the status subresource; the body's resourceVersion and uid are preconditions. */
  replacePodStatus(pod: V1Pod): Promise<V1Pod>;
  /** The kubelet's final delete: grace period 0, only while the uid still matches. */
  deletePodNow(namespace: string, name: string, uid: string): Promise<void>;
}

/**
 * The user agent of the process kubelet's writes: it authenticates as the local cluster's admin, so this is
 * how an audit reader tells its pod status, token and final delete requests from a person's or khrun's.
 */
export const KUBELET_USER_AGENT = 'khrun-devkit-kubelet';
const asKubelet = setHeaderOptions('User-Agent', KUBELET_USER_AGENT);

export function kubeletApi(kc: KubeConfig): KubeletApi {
  // Keep-alive connections (kube/keep-alive.ts): a new TLS connection per request cost the kubelet's
  // thread 14% of its time when a thousand pods started at once. A client object of its own, unbounded:
  // a runner session in the same process (the integration tests') bounds its own requests, not the kubelet's.
  const { core } = kubeClient(kc);
  const orUndefined = async <T>(call: Promise<T>): Promise<T | undefined> => {
    try {
      return await call;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    async readConfigMap(namespace, name) {
      const cm = await orUndefined(core.readNamespacedConfigMap({ name, namespace }));
      if (!cm) return undefined;
      const out: Record<string, Buffer> = {};
      for (const [k, v] of Object.entries(cm.data ?? {})) out[k] = Buffer.from(v, 'utf8');
      for (const [k, v] of Object.entries(cm.binaryData ?? {})) out[k] = Buffer.from(v, 'base64');
      return out;
    },
    async readSecret(namespace, name) {
      const secret = await orUndefined(core.readNamespacedSecret({ name, namespace }));
      if (!secret) return undefined;
      const out: Record<string, Buffer> = {};
      for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64');
      return out;
    },
    async requestToken(opts) {
      const response = await core.createNamespacedServiceAccountToken(
        {
          name: opts.serviceAccount,
          namespace: opts.namespace,
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: {
              audiences: opts.audience ? [opts.audience] : [],
              expirationSeconds: opts.expirationSeconds,
              boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: opts.pod.name, uid: opts.pod.uid },
            },
          },
        },
        asKubelet,
      );
      const token = response.status?.token;
      if (!token)
        throw new Error(`the TokenRequest for ${opts.namespace}/${opts.serviceAccount} returned no token`);
      return token;
    },
    readPod: (namespace, name) => orUndefined(core.readNamespacedPod({ name, namespace })),
    replacePodStatus: (pod) =>
      core.replaceNamespacedPodStatus(
        {
          name: pod.metadata!.name!,
          namespace: pod.metadata!.namespace!,
          body: pod,
        },
        asKubelet,
      ),
    async deletePodNow(namespace, name, uid) {
      try {
        // With a body, the API server takes the options from it and ignores the query parameters.
        await core.deleteNamespacedPod(
          {
            name,
            namespace,
            body: { gracePeriodSeconds: 0, preconditions: { uid } },
          },
          asKubelet,
        );
      } catch (error) {
        // Gone already, or replaced by a pod of the same name (the uid precondition failed): not ours.
        if (!isNotFound(error) && !isConflict(error)) throw error;
      }
    },
  };
}
