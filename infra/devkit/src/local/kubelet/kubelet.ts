import { appendFileSync } from 'node:fs';
import { access, constants, mkdir, rm } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { type KubeConfig, type V1Node, type V1Pod, type V1Taint, VersionApi } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { apiErrorMessage } from '../../../../../lib/kube/errors.ts';
import { runListWatch } from '../../../../../lib/kube/list-watch.ts';
import type { PodNetwork } from '../pod-network.ts';
import { Spawner } from '../spawner.ts';
import { kubeletApi } from './api.ts';
import type { Tools } from './container-process.ts';
import { HostMountPoints } from './host-paths.ts';
import type { ImageMap } from './image-map.ts';
import { IpPool, type IpRange } from './ip-pool.ts';
import { renewNodeLease } from './lease.ts';
import { type LogLookup, selfSignedCert, startLogServer } from './log-server.ts';
import { buildNode, machineInfo, maintainNode } from './node.ts';
import { type KubeletLog, PodWorker } from './pod-worker.ts';
import { DEFAULT_RESTART_BACKOFF, type RestartBackoff } from './restart.ts';
import { linuxSandboxOps } from './sandbox.ts';
import { apiTime } from './status.ts';

/**
 * The process kubelet: a Node of the real cluster whose pods' containers are local processes.
 *
 * Isolation per pod: a network namespace with its own address on the slot's bridge (e.g. 10.213.1.1 up), so
 * connections come from the pod IP; per container, a private mount namespace (volumes, the service
 * account token and the termination-message file are bind-mounted there, never on the host) and a UTS
 * namespace with the pod's hostname. Processes run as root on the host's file system and PID namespace:
 * no image is unpacked (see images.ts), there are no cgroup limits, probes or exec/attach/port-forward.
 * ServiceAccount tokens are written once, not refreshed; ConfigMap/Secret volumes are not updated live.
 *
 * Logs: each run's output goes to <stateDir>/pods/<ns>_<pod>_<uid>/logs/<container>/<n>.log, served to the
 * API server (kubectl logs, readNamespacedPodLog) by the HTTPS endpoint in log-server.ts, and available
 * directly through podLogPath().
 */
export interface ProcessKubelet {
  readonly nodeName: string;
  /** The log endpoint's port on hostIp (the Node's daemonEndpoints.kubeletEndpoint.Port). */
  readonly port: number;
  /** The log file of a container's current run (previous: the run before); undefined if none. */
  podLogPath(namespace: string, pod: string, container: string, previous?: boolean): string | undefined;
  /** Kills every pod process, removes every namespace, mount point and directory it made; idempotent. */
  stop(): Promise<void>;
}

export interface ProcessKubeletOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  hostIp: string;
  apiServer: { host: string; port: number };
  /** Appended to every container's NODE_PATH, standing in for packages an image would ship. */
  imageNodePath?: string;
  /** What containers without `command` run, standing in for their images' ENTRYPOINT/CMD (image-map.ts). */
  imageMap?: ImageMap;
  stateDir: string;
  /** The pod network (bridge, namespaces) of this cluster's slot. */
  network: PodNetwork;
  /** Pod addresses; two kubelets on one bridge need disjoint ranges. Default: the network's whole range. */
  podIpRange?: IpRange;
  /** Taints to register the Node with (e.g. to keep the scheduler away from a test node). */
  taints?: V1Taint[];
  restartBackoff?: RestartBackoff;
  /** How long stop() waits after SIGTERM before SIGKILL. Default 2 s. */
  shutdownGraceMs?: number;
  /** Structured log lines; default: JSON lines appended to `<stateDir>.log`. */
  log?: KubeletLog;
  /** How long start-up may wait for the API server to take the Node. Default 60 s. */
  registrationTimeoutMs?: number;
}

/** One JSON line per event, appended synchronously so no line is lost when the process ends. */
function fileLog(path: string): KubeletLog {
  return (line, fields) => {
    try {
      appendFileSync(path, `${JSON.stringify({ time: new Date().toISOString(), msg: line, ...fields })}\n`);
    } catch {
      // logging must never break the kubelet
    }
  };
}

/** Finds an executable on the host's PATH (resolved once, so a pod's PATH never matters). */
async function which(command: string): Promise<string> {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/usr/bin', '/sbin', '/bin']);
  for (const dir of dirs) {
    const candidate = join(dir, command);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  throw new Error(`the process kubelet needs ${command} on PATH`);
}

/** Registers the Node, starts the Lease heartbeat, the log endpoint and the pod watch. */
export async function startProcessKubelet(opts: ProcessKubeletOptions): Promise<ProcessKubelet> {
  const log: KubeletLog = opts.log ?? fileLog(`${opts.stateDir}.log`);
  const stopping = new AbortController();
  const podsDir = join(opts.stateDir, 'pods');
  await mkdir(podsDir, { recursive: true });
  const tools: Tools = { ip: await which('ip'), unshare: await which('unshare'), sh: await which('sh') };
  const spawner = new Spawner();
  const api = kubeletApi(opts.kubeConfig);
  const hostPaths = new HostMountPoints();
  const ipPool = new IpPool(opts.podIpRange ?? opts.network.podIpRange);
  const workers = new Map<string, PodWorker>();
  const finalDeletes = new Set<string>();
  const background: Array<Promise<void>> = [];

  /** The newest worker of that name (a pod deleted and created again has a new uid, so a new worker). */
  const findWorker = (namespace: string, name: string) =>
    [...workers.values()].filter((w) => w.namespace === namespace && w.name === name).at(-1);
  const lookup = (namespace: string, pod: string, container: string, previous: boolean): LogLookup => {
    const worker = findWorker(namespace, pod);
    if (!worker)
      return { kind: 'error', statusCode: 404, message: `pod ${namespace}/${pod} is not on this node` };
    const file = worker.logFile(container, previous);
    if (!file) {
      return {
        kind: 'error',
        statusCode: 400,
        message: `container "${container}" in pod "${pod}" is waiting to start`,
      };
    }
    return { kind: 'found', file, untilNotRunning: () => worker.whenNotRunning(container) };
  };

  const tls = await selfSignedCert(join(opts.stateDir, 'pki'), opts.hostIp, opts.nodeName);
  const logServer = await startLogServer({ host: opts.hostIp, tls, lookup });
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      stopping.abort();
      await Promise.all([...workers.values()].map((w) => w.shutdown(opts.shutdownGraceMs ?? 2_000)));
      await Promise.allSettled(background);
      await logServer.close();
      spawner.close();
      await hostPaths.removeAll();
      await rm(opts.stateDir, { recursive: true, force: true });
      log('process kubelet stopped', { node: opts.nodeName });
    })();
    return stopped;
  };

  try {
    const version = await opts.kubeConfig.makeApiClient(VersionApi).getCode();
    const machine = await machineInfo(opts.stateDir);
    const nodeOptions = {
      nodeName: opts.nodeName,
      hostIp: opts.hostIp,
      kubeletPort: logServer.port,
      kubeletVersion: version.gitVersion,
      taints: opts.taints,
    };
    let nodeUid: string | undefined;
    let markRegistered = () => {};
    const registered = new Promise<void>((resolve) => {
      markRegistered = resolve;
    });
    background.push(
      maintainNode({
        kc: opts.kubeConfig,
        desired: (previous?: V1Node) => buildNode(nodeOptions, machine, apiTime(new Date()), previous),
        signal: stopping.signal,
        log,
        onRegistered: (node) => {
          nodeUid = node.metadata?.uid;
          markRegistered();
        },
      }),
    );
    const waited = new AbortController();
    const timeoutMs = opts.registrationTimeoutMs ?? 60_000;
    const timeout = abortableDelay(timeoutMs, waited.signal).then(() => {
      throw new Error(`the API server did not take Node ${opts.nodeName} within ${timeoutMs} ms`);
    });
    try {
      await Promise.race([registered, timeout]);
    } finally {
      waited.abort();
    }
    background.push(
      renewNodeLease({
        kc: opts.kubeConfig,
        nodeName: opts.nodeName,
        nodeUid: () => nodeUid,
        signal: stopping.signal,
        log,
      }),
    );

    const deps = {
      api,
      ipPool,
      sandboxOps: linuxSandboxOps(opts.network, (command, args) => spawner.run(command, args)),
      hostIp: opts.hostIp,
      apiServer: opts.apiServer,
      imageNodePath: opts.imageNodePath,
      imageMap: opts.imageMap ?? [],
      podsDir,
      tools,
      spawner,
      hostPaths,
      backoff: opts.restartBackoff ?? DEFAULT_RESTART_BACKOFF,
      log,
      onGone: (uid: string) => workers.delete(uid),
    };
    const reconcile = (pods: ReadonlyMap<string, V1Pod>) => {
      if (stopping.signal.aborted) return;
      const seen = new Set<string>();
      for (const pod of pods.values()) {
        const uid = pod.metadata?.uid ?? '';
        seen.add(uid);
        const existing = workers.get(uid);
        if (existing) {
          existing.update(pod);
          continue;
        }
        const phase = pod.status?.phase;
        if (phase === 'Succeeded' || phase === 'Failed' || pod.metadata?.deletionTimestamp) {
          // Nothing of ours runs for it (finished, or deleted before we ran it): delete at once when asked.
          if (pod.metadata?.deletionTimestamp && !finalDeletes.has(uid)) {
            finalDeletes.add(uid);
            api.deletePodNow(pod.metadata.namespace!, pod.metadata.name!, uid).catch((error: unknown) => {
              finalDeletes.delete(uid);
              log('final pod delete failed', { pod: pod.metadata?.name, error: apiErrorMessage(error) });
            });
          }
          continue;
        }
        const worker = new PodWorker(pod, deps);
        workers.set(uid, worker);
        log('pod admitted', { pod: `${worker.namespace}/${worker.name}`, uid });
        worker.start();
      }
      for (const [uid, worker] of workers) if (!seen.has(uid)) worker.removed();
      for (const uid of finalDeletes) if (!seen.has(uid)) finalDeletes.delete(uid);
    };
    background.push(
      runListWatch<V1Pod>({
        kc: opts.kubeConfig,
        path: '/api/v1/pods',
        fieldSelector: `spec.nodeName=${opts.nodeName}`,
        signal: stopping.signal,
        onChange: reconcile,
        onInterruption: (reason) => log('pod watch interrupted', { reason }),
      }),
    );
    log('process kubelet started', { node: opts.nodeName, logPort: logServer.port });
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodeName: opts.nodeName,
    port: logServer.port,
    podLogPath: (namespace, pod, container, previous = false) =>
      findWorker(namespace, pod)?.logFile(container, previous),
    stop,
  };
}
