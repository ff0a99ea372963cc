import { join } from 'node:path';
import { type LocalCluster, startLocalCluster } from '@khrun/devkit/local/cluster.ts';
import type { TestProject } from 'vitest/node';
import { ensureDebianCommand } from '../helpers/debian.ts';
import {
  buildClusterPrerequisites,
  buildTestDist,
  cacheDir,
  repoRoot,
  TEST_DIST_DIR,
  TEST_DIST_READY_ENV,
} from './builds.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    hostIp: string;
    apiServerPort: number;
    clusterDir: string;
    kubernetesVersion: string;
    podNetworkSlot: number;
    /** The bundles khrun's image runs (helpers/deploy.ts buildTestBundles), built once per run. */
    testDistDir: string;
  }
}

/**
 * One real cluster for each integration lane of the run (vitest.config.ts: the global setup is the
 * project's, so every lane has a cluster of its own, on the next free pod-network slot). With CI=true a
 * cluster that cannot start fails the run: an integration suite that silently skips would be a test that
 * cannot fail.
 */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const lane = project.name;
  const log = (line: string) => console.log(`[${lane}] ${line}`);
  // The host programs the local cluster runs besides its own binaries: the pod network's `ip` (iproute2) and
  // the process kubelet's serving certificate (openssl), installed from Debian when missing and root.
  await ensureDebianCommand('ip', 'iproute2');
  await ensureDebianCommand('openssl', 'openssl');
  // Kuberhealthy v2.7.1's and v3.0.0's programs, built (or found cached) before the cluster starts, so their
  // images run unedited from their own manifests (test/integration/compat, helpers/kuberhealthy-v2.ts).
  const kuberhealthyImages = await buildClusterPrerequisites((line) => log(`[build] ${line}`));
  // Once per run, before any file starts: files that run khrun's image (buildTestBundles) share them.
  if (!process.env[TEST_DIST_READY_ENV]) await buildTestDist();
  const cluster: LocalCluster = await startLocalCluster({
    kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined,
    cacheDir: cacheDir(),
    buildDir: join(repoRoot, 'infra/build'),
    crdDir: join(repoRoot, 'infra/crds'),
    // Pods of khrun's image (ghcr.io/khrun/khrun of infra/deploy and the chart, or `khrun`) run the test
    // build (helpers/deploy.ts).
    khrunDistDir: TEST_DIST_DIR,
    // Checker pods of `node` images may leave out command (args only), as the image's entrypoint is node.
    imageMap: [{ image: 'node', entrypoint: [process.execPath], cmd: [] }, ...kuberhealthyImages],
    onProgress: (line) => log(`[local cluster] ${line}`),
  });
  log(
    `[local cluster] Kubernetes ${cluster.kubernetesVersion}, etcd ${cluster.etcdVersion}, pod-network slot ` +
      `${cluster.network.slot}, ready in ${Date.now() - started} ms`,
  );
  project.provide('kubeconfigPath', cluster.kubeconfigPath);
  project.provide('hostIp', cluster.hostIp);
  project.provide('apiServerPort', cluster.controlPlane.port);
  project.provide('clusterDir', cluster.dir);
  project.provide('kubernetesVersion', cluster.kubernetesVersion);
  project.provide('podNetworkSlot', cluster.network.slot);
  project.provide('testDistDir', TEST_DIST_DIR);
  // Returned rather than exported: a vitest process that runs several lanes calls it once per lane's cluster.
  return () => cluster.stop();
}
