import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { type LocalCluster, startLocalCluster } from '@khrun/devkit/local/cluster.ts';
import { kubeConfigFor } from '@khrun/devkit/local/kubeconfig.ts';
import type { ImageMapEntry } from '@khrun/devkit/local/kubelet/image-map.ts';
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { waitForSet } from '../../lib/kube/list-watch.ts';

export const repoRoot = resolve(import.meta.dirname, '../..');

export interface BenchCluster {
  cluster: LocalCluster;
  namespace: string;
  auditLog: string;
  /** A ServiceAccount identity per measured actor, so the audit log tells their requests apart. */
  userKubeConfig(name: string): Promise<{ kc: KubeConfig; username: string; token: string }>;
  /** A kubeconfig for an existing ServiceAccount (e.g. one infra/deploy made), with its own RBAC. */
  serviceAccountKubeConfig(namespace: string, name: string): Promise<{ kc: KubeConfig; username: string }>;
}

/** The local cluster plus a namespace for the benchmark's checks. */
export async function startBenchCluster(
  progress: (line: string) => void,
  kubeletLog?: (line: string, fields?: Record<string, unknown>) => void,
  /** Images run as local programs (e.g. the Kuberhealthy builds, for the section that runs them). */
  imageMap: ImageMapEntry[] = [],
): Promise<BenchCluster> {
  const cluster = await startLocalCluster({
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined,
    buildDir: join(repoRoot, 'infra/build'),
    crdDir: join(repoRoot, 'infra/crds'),
    onProgress: progress,
    kubeletLog,
    imageMap,
  });
  const kc = cluster.kubeConfig;
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = 'bench';
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await waitForSet({
    kc,
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    fieldSelector: 'metadata.name=default',
    timeoutMs: 30_000,
    description: 'the bench namespace default ServiceAccount',
    decide: (items) => (items.size > 0 ? true : undefined),
  });
  return {
    cluster,
    namespace,
    auditLog: join(cluster.dir, 'audit.log'),
    async serviceAccountKubeConfig(saNamespace, name) {
      const tr = await core.createNamespacedServiceAccountToken({
        name,
        namespace: saNamespace,
        body: { spec: { audiences: [], expirationSeconds: 7200 } },
      });
      const server = kc.getCurrentCluster()?.server ?? '';
      return {
        kc: kubeConfigFor({
          server,
          caData: cluster.controlPlane.caData,
          token: tr.status?.token ?? '',
          user: name,
        }),
        username: `system:serviceaccount:${saNamespace}:${name}`,
      };
    },
    async userKubeConfig(name) {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
      // Broad rights: this measures request counts and latency, not least privilege (tests cover that).
      await kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
        body: {
          metadata: { name: `bench-${name}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'ServiceAccount', name, namespace }],
        },
      });
      const tr = await core.createNamespacedServiceAccountToken({
        name,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 7200 } },
      });
      const token = tr.status?.token ?? '';
      const server = kc.getCurrentCluster()?.server ?? '';
      return {
        kc: kubeConfigFor({ server, caData: cluster.controlPlane.caData, token, user: name }),
        username: `system:serviceaccount:${namespace}:${name}`,
        token,
      };
    },
  };
}
