import { delimiter } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

/** The --context asked for is not in the kubeconfig. */
export class UnknownContextError extends Error {
  override readonly name = 'UnknownContextError';
}

/**
 * kubectl's order: the given kubeconfig (a path, or a KUBECONFIG-style list of paths merged as kubectl
 * merges them; the caller passes $KUBECONFIG), else ~/.kube/config, else the in-cluster ServiceAccount.
 * Fails clearly when the context does not exist or the result has no cluster.
 */
export function loadKubeConfig(opts: { kubeconfig?: string; context?: string }): KubeConfig {
  const kc = new KubeConfig();
  const [first, ...more] = (opts.kubeconfig ?? '').split(delimiter).filter(Boolean);
  if (first === undefined) kc.loadFromDefault();
  else {
    kc.loadFromFile(first);
    for (const file of more) {
      const next = new KubeConfig();
      next.loadFromFile(file);
      kc.mergeConfig(next);
    }
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context))
      throw new UnknownContextError(`the kubeconfig has no context "${opts.context}"`);
    kc.setCurrentContext(opts.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster || cluster.server === 'http://localhost:8080') {
    throw new Error('no Kubernetes cluster configured (no kubeconfig with a cluster, not in a pod)');
  }
  return kc;
}
