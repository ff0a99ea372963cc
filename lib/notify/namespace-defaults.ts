import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { NAMESPACE_DEFAULTS_CONFIGMAP } from './config.ts';
import type { ReadNamespaceDefaults } from './policy-source.ts';

/**
 * The namespace defaults read through the client object: one GET of the ConfigMap khrun-notifications in
 * the namespace (the runner's ClusterRole grants get on that name only); none there is no defaults.
 */
export function kubeNamespaceDefaults(client: Pick<KubeClient, 'core'>): ReadNamespaceDefaults {
  return async (namespace) => {
    try {
      const cm = await client.core.readNamespacedConfigMap({ name: NAMESPACE_DEFAULTS_CONFIGMAP, namespace });
      return cm.data ?? {};
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  };
}
