import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { resolveKubectl } from '@khrun/devkit/local/binaries.ts';
import { type LocalCluster, startLocalCluster } from '@khrun/devkit/local/cluster.ts';
import { kuberhealthyV2ImageMap } from '@khrun/devkit/local/kuberhealthy-v2.ts';
import { kuberhealthyV3Binary, kuberhealthyV3ImageMap } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import type { TestProject } from 'vitest/node';
import { goCheckerBinary } from '../helpers/khrun.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    hostIp: string;
    apiServerPort: number;
    clusterDir: string;
    kubernetesVersion: string;
    podNetworkSlot: number;
  }
}

const root = resolve(import.meta.dirname, '../../..');
let cluster: LocalCluster | undefined;

/**
 * One real cluster for the whole integration run. With CI=true a cluster that cannot start fails the run:
 * an integration suite that silently skips would be a test that cannot fail.
 */
export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  const cacheDir =
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
  // Kuberhealthy v2.7.1's daemon and check programs, built (or found cached) before the cluster starts, so
  // their images run unedited from the module's own YAMLs (test/integration/compat, helpers/kuberhealthy-v2.ts).
  const kuberhealthyV2 = await kuberhealthyV2ImageMap({
    cacheDir,
    buildDir: join(root, 'infra/build'),
    onProgress: (line) => console.log(`[build] ${line}`),
  });
  // Kuberhealthy v3.0.0's controller, for its image in v3's own manifests (helpers/kuberhealthy-v3.ts).
  const kuberhealthyV3 = kuberhealthyV3ImageMap(
    await kuberhealthyV3Binary({
      cacheDir,
      buildDir: join(root, 'infra/build'),
      onProgress: (line) => console.log(`[build] ${line}`),
    }),
  );
  cluster = await startLocalCluster({
    kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined,
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(root, 'infra/build'),
    crdDir: join(root, 'infra/crds'),
    // Pods of khrun's image (ghcr.io/khrun/khrun of infra/deploy and the chart, or `khrun`) run the test
    // build (helpers/deploy.ts).
    khrunDistDir: join(root, '.khrun/test-dist'),
    // Checker pods of `node` images may leave out command (args only), as the image's entrypoint is node.
    imageMap: [
      { image: 'node', entrypoint: [process.execPath], cmd: [] },
      ...kuberhealthyV2,
      ...kuberhealthyV3,
    ],
    onProgress: (line) => console.log(`[local cluster] ${line}`),
  });
  console.log(
    `[local cluster] Kubernetes ${cluster.kubernetesVersion}, etcd ${cluster.etcdVersion}, ready in ${Date.now() - started} ms`,
  );
  // Go builds the tests need, done here (no timeout) rather than inside a test on a fresh machine: kubectl
  // for `kubectl apply -k`, and a checker on Kuberhealthy v2.7.1's Go checkclient.
  console.log('[local cluster] building (or finding cached) kubectl and the Go checkclient checker');
  await resolveKubectl({
    cacheDir,
    buildDir: join(root, 'infra/build'),
    onProgress: (l) => console.log(`[build] ${l}`),
  });
  await goCheckerBinary();
  project.provide('kubeconfigPath', cluster.kubeconfigPath);
  project.provide('hostIp', cluster.hostIp);
  project.provide('apiServerPort', cluster.controlPlane.port);
  project.provide('clusterDir', cluster.dir);
  project.provide('kubernetesVersion', cluster.kubernetesVersion);
  project.provide('podNetworkSlot', cluster.network.slot);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
