import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startTcpProxy } from './api-proxy.ts';
import { type BinaryOptions, resolveBinaries } from './binaries.ts';
import { installCrds } from './crds.ts';
import { acquireInstanceLock, killIfAlive } from './instance-lock.ts';
import { type ProcessKubelet, startProcessKubelet } from './kubelet/kubelet.ts';
import { type ControlPlane, startControlPlane } from './control-plane.ts';
import { createHostBridge, deleteHostBridge, deleteNetnsByName, listPodNetworks, POD_NETWORK } from './pod-network.ts';

export interface LocalClusterOptions extends Omit<BinaryOptions, 'signal'> {
  /** Directory of the CRD YAMLs to install (infra/crds). */
  crdDir: string;
  /** Where the lock file lives (one cluster per machine). Defaults to the OS temp dir. */
  runtimeDir?: string;
  signal?: AbortSignal;
}

export interface LocalCluster {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  controlPlane: ControlPlane;
  kubelet: ProcessKubelet;
  /** Where pods reach the API server and host-side servers. */
  hostIp: string;
  kubernetesVersion: string;
  etcdVersion: string;
  dir: string;
  notices: string[];
  stop(): Promise<void>;
}

/**
 * Starts the whole local cluster: pod network, control plane, CRDs, process kubelet. Everything it starts
 * is stopped by stop(), and by the next start if this process is killed first.
 */
export async function startLocalCluster(opts: LocalClusterOptions): Promise<LocalCluster> {
  const progress = opts.onProgress ?? (() => {});
  const binaries = await resolveBinaries(opts);
  for (const notice of binaries.notices) progress(notice);

  const dir = await mkdtemp(join(tmpdir(), 'khrun-cluster-'));
  const lock = await acquireInstanceLock(opts.runtimeDir ?? tmpdir(), { pid: process.pid, dir, childPids: [] }, reapStale);
  const cleanups: Array<() => Promise<void>> = [
    () => rm(dir, { recursive: true, force: true }),
    () => lock.release(),
  ];
  const cleanUp = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      await fn().catch((error: unknown) => progress(`clean-up step failed: ${String(error)}`));
    }
  };
  try {
    await createHostBridge();
    cleanups.push(deleteHostBridge);
    const controlPlane = await startControlPlane({
      binaries,
      dir,
      advertiseAddress: POD_NETWORK.hostIp,
      onProgress: progress,
      signal: opts.signal,
    });
    cleanups.push(() => controlPlane.stop());
    await lock.update({ kubeconfigPath: controlPlane.kubeconfigPath, childPids: controlPlane.pids() });

    const proxy = await startTcpProxy({
      listenHost: POD_NETWORK.hostIp,
      listenPort: controlPlane.port,
      targetHost: '127.0.0.1',
      targetPort: controlPlane.port,
    });
    cleanups.push(() => proxy.close());

    progress('installing CRDs');
    await installCrds(controlPlane.adminKubeConfig, opts.crdDir, opts.signal);

    progress('starting the process kubelet');
    const kubelet = await startProcessKubelet({
      kubeConfig: controlPlane.adminKubeConfig,
      nodeName: 'khrun-node',
      hostIp: POD_NETWORK.hostIp,
      apiServer: { host: POD_NETWORK.hostIp, port: controlPlane.port },
      stateDir: join(dir, 'kubelet'),
    });
    cleanups.push(() => kubelet.stop());

    return {
      kubeconfigPath: controlPlane.kubeconfigPath,
      kubeConfig: controlPlane.adminKubeConfig,
      controlPlane,
      kubelet,
      hostIp: POD_NETWORK.hostIp,
      kubernetesVersion: controlPlane.kubernetesVersion,
      etcdVersion: binaries.etcdVersion,
      dir,
      notices: binaries.notices,
      stop: cleanUp,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

/** Reaps what a killed cluster owner left: its processes, pod namespaces, bridge and data dir. */
async function reapStale(stale: { childPids: number[]; dir: string }): Promise<void> {
  for (const pid of stale.childPids) killIfAlive(pid);
  for (const netns of await listPodNetworks()) await deleteNetnsByName(netns);
  await deleteHostBridge();
  if (stale.dir.startsWith(join(tmpdir(), 'khrun-cluster-'))) await rm(stale.dir, { recursive: true, force: true });
}
