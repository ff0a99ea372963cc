import { homedir } from 'node:os';
import { join } from 'node:path';
import { type LocalCluster, startLocalCluster } from '@khrun/devkit/local/cluster.ts';
import { repoRoot } from '../../helpers/khrun.ts';
import type { Target } from './khrun-process.ts';

/**
 * A whole local cluster of the test file's own (the next free pod-network slot), for faults that must not
 * touch the suite's shared cluster: stopping kube-apiserver or etcd. Same binaries as the global setup.
 */
export async function startOwnCluster(): Promise<{ cluster: LocalCluster; target: Target }> {
  const cluster = await startLocalCluster({
    kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined,
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(repoRoot, 'infra/build'),
    crdDir: join(repoRoot, 'infra/crds'),
  });
  return { cluster, target: { kubeconfigPath: cluster.kubeconfigPath, hostIp: cluster.hostIp } };
}
