import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startTcpProxy } from './api-proxy.ts';
import { type BinaryOptions, resolveBinaries } from './binaries.ts';
import { type ControlPlane, startControlPlane } from './control-plane.ts';
import { installCrds } from './crds.ts';
import { acquireInstanceLock, killIfAlive } from './instance-lock.ts';
import { type ImageMapEntry, loadImageMapFile } from './kubelet/image-map.ts';
import { khrunImageEntries } from './kubelet/khrun-image.ts';
import { type ProcessKubelet, startProcessKubelet } from './kubelet/kubelet.ts';
import type { KubeletLog } from './kubelet/pod-worker.ts';
import {
  createHostBridge,
  deleteHostBridge,
  deleteNetnsByName,
  listPodNetworks,
  netnsPids,
  POD_NETWORK_SLOTS,
  type PodNetwork,
  podNetworkForSlot,
} from './pod-network.ts';

export interface LocalClusterOptions extends Omit<BinaryOptions, 'signal'> {
  /** Directory of the CRD YAMLs to install (infra/crds). */
  crdDir: string;
  /** Where the lock files live (one cluster per pod-network slot). Defaults to the OS temp dir. */
  runtimeDir?: string;
  /**
   * The pod-network slot: a fixed one fails when it is taken (khrun local up uses 0); undefined takes the
   * first free one (test runs, so that several can run on one machine).
   */
  slot?: number;
  /** Node packages pods find as if their image shipped them (NODE_PATH); khrun's node_modules by default. */
  imageNodePath?: string;
  /**
   * What containers without `command` run (kubelet/image-map.ts): these entries first, then
   * those of imageMapFile, then khrun's own image (`ghcr.io/khrun/khrun` and `khrun`, any tag: the local
   * build of its ENTRYPOINT).
   */
  imageMap?: ImageMapEntry[];
  /** An image-map file (YAML or JSON), `khrun local up --image-map FILE`. */
  imageMapFile?: string;
  /** The directory that stands for the khrun image's /app/dist (default <repo>/dist, `npm run build`). */
  khrunDistDir?: string;
  /** Receives the process kubelet's structured events (default: a log file in the cluster dir). */
  kubeletLog?: KubeletLog;
  signal?: AbortSignal;
}

export interface LocalCluster {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  controlPlane: ControlPlane;
  kubelet: ProcessKubelet;
  /** Where pods reach the API server and host-side servers. */
  hostIp: string;
  network: PodNetwork;
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
  // Read first: a bad image-map file fails before anything is started.
  const root = join(opts.buildDir, '..', '..');
  const imageMap = [
    ...(opts.imageMap ?? []),
    ...(opts.imageMapFile ? await loadImageMapFile(opts.imageMapFile) : []),
    ...(await khrunImageEntries({ root, distDir: opts.khrunDistDir })),
  ];
  const binaries = await resolveBinaries(opts);
  for (const notice of binaries.notices) progress(notice);

  const dir = await mkdtemp(join(tmpdir(), 'khrun-cluster-'));
  const { lock, network } = await acquireSlot(opts, dir).catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
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
    await createHostBridge(network);
    cleanups.push(() => deleteHostBridge(network));
    const controlPlane = await startControlPlane({
      binaries,
      dir,
      advertiseAddress: network.hostIp,
      onProgress: progress,
      signal: opts.signal,
    });
    cleanups.push(() => controlPlane.stop());
    await lock.update({ kubeconfigPath: controlPlane.kubeconfigPath, childPids: controlPlane.pids() });

    const proxy = await startTcpProxy({
      listenHost: network.hostIp,
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
      hostIp: network.hostIp,
      apiServer: { host: network.hostIp, port: controlPlane.port },
      stateDir: join(dir, 'kubelet'),
      network,
      podIpRange: network.podIpRange,
      imageNodePath: opts.imageNodePath ?? join(root, 'node_modules'),
      imageMap,
      ...(opts.kubeletLog ? { log: opts.kubeletLog } : {}),
    });
    cleanups.push(() => kubelet.stop());

    return {
      kubeconfigPath: controlPlane.kubeconfigPath,
      kubeConfig: controlPlane.adminKubeConfig,
      controlPlane,
      kubelet,
      hostIp: network.hostIp,
      network,
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

/** Takes the requested slot, or the first free one; a slot whose owner died is reaped and reused. */
async function acquireSlot(opts: LocalClusterOptions, dir: string) {
  // Slot 0 is `khrun local up`'s; automatic choices take it last, so tests can run beside a local cluster.
  const slots =
    opts.slot === undefined ? [...Array(POD_NETWORK_SLOTS).keys()].slice(1).concat(0) : [opts.slot];
  let lastError: unknown;
  for (const slot of slots) {
    const network = podNetworkForSlot(slot);
    try {
      const lock = await acquireInstanceLock(
        join(opts.runtimeDir ?? tmpdir(), `khrun-local-cluster-${slot}.lock`),
        { pid: process.pid, dir, childPids: [] },
        (stale) => reapStale(network, stale),
      );
      return { lock, network };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/** Reaps what a killed cluster owner left: its processes, pod namespaces (and their processes), bridge, dir. */
async function reapStale(network: PodNetwork, stale: { childPids: number[]; dir: string }): Promise<void> {
  for (const pid of stale.childPids) killIfAlive(pid);
  for (const netns of await listPodNetworks(network)) {
    for (const pid of await netnsPids(netns)) killIfAlive(pid);
    await deleteNetnsByName(netns);
  }
  await deleteHostBridge(network);
  if (stale.dir.startsWith(join(tmpdir(), 'khrun-cluster-')))
    await rm(stale.dir, { recursive: true, force: true });
}
