import { KubeConfig } from '@kubernetes/client-node';

/** A kubeconfig for a bearer token against the local API server, verifying its self-signed CA. */
export function kubeConfigFor(opts: {
  server: string;
  caData: string;
  token: string;
  user: string;
  /** The context's namespace (default "default"), as in-cluster config takes the pod's. */
  namespace?: string;
}): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'khrun-local', server: opts.server, caData: opts.caData, skipTLSVerify: false }],
    users: [{ name: opts.user, token: opts.token }],
    contexts: [
      {
        name: 'khrun-local',
        cluster: 'khrun-local',
        user: opts.user,
        namespace: opts.namespace ?? 'default',
      },
    ],
    currentContext: 'khrun-local',
  });
  return kc;
}
