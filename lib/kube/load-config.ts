import { KubeConfig } from '@kubernetes/client-node';

/**
 * kubectl's order: an explicit --kubeconfig, then $KUBECONFIG (the caller passes it), then ~/.kube/config,
 * then the in-cluster ServiceAccount. Fails clearly when the result has no cluster.
 */
export function loadKubeConfig(opts: { kubeconfig?: string; context?: string }): KubeConfig {
  const kc = new KubeConfig();
  if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
  else kc.loadFromDefault();
  if (opts.context) kc.setCurrentContext(opts.context);
  const cluster = kc.getCurrentCluster();
  if (!cluster || cluster.server === 'http://localhost:8080') {
    throw new Error(
      'no Kubernetes cluster configured: pass --kubeconfig PATH, set KUBECONFIG, or run inside a cluster ' +
        '(for a local one: npx khrun local up, then KUBECONFIG=.khrun/local/kubeconfig)',
    );
  }
  return kc;
}
