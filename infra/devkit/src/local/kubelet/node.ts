import { readFile, statfs } from 'node:fs/promises';
import { arch, cpus, release, totalmem } from 'node:os';
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
  type V1NodeCondition,
  type V1Taint,
} from '@kubernetes/client-node';
import { apiErrorMessage, isAlreadyExists, isConflict, isNotFound } from '../../../../../lib/kube/errors.ts';
import { runListWatch } from '../../../../../lib/kube/list-watch.ts';

/** What the Node object says about this machine; gathered once (machineInfo) and turned into a Node by buildNode. */
export interface MachineInfo {
  cpus: number;
  memoryBytes: number;
  ephemeralStorageBytes?: number;
  kernelVersion: string;
  osImage: string;
  architecture: string;
  machineID: string;
  bootID: string;
}

export interface NodeOptions {
  nodeName: string;
  hostIp: string;
  /** Where the API server reaches our log endpoint (status.daemonEndpoints.kubeletEndpoint.Port). */
  kubeletPort: number;
  kubeletVersion: string;
  taints?: V1Taint[];
  maxPods?: number;
}

/** The taints the node lifecycle controller puts on a node that stopped reporting; we take them off. */
export const LIFECYCLE_TAINTS = new Set(['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']);

export async function machineInfo(stateDir: string): Promise<MachineInfo> {
  const text = (p: string) =>
    readFile(p, 'utf8').then(
      (s) => s.trim(),
      () => '',
    );
  const osRelease = await text('/etc/os-release');
  const fs = await statfs(stateDir).catch(() => undefined);
  return {
    cpus: cpus().length,
    memoryBytes: totalmem(),
    ephemeralStorageBytes: fs ? fs.blocks * fs.bsize : undefined,
    kernelVersion: release(),
    osImage: /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(osRelease)?.[1] ?? 'Linux',
    architecture: arch() === 'x64' ? 'amd64' : arch(),
    machineID: (await text('/etc/machine-id')) || 'unknown',
    bootID: (await text('/proc/sys/kernel/random/boot_id')) || 'unknown',
  };
}

/** The kubelet's node conditions for a healthy node; lastTransitionTime kept from `previous` when unchanged. Pure. */
export function healthyConditions(previous: V1NodeCondition[] | undefined, now: string): V1NodeCondition[] {
  const spec: Array<[string, string, string, string]> = [
    ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
    ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
    ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
    ['Ready', 'True', 'KubeletReady', 'khrun process kubelet is posting ready status'],
  ];
  return spec.map(([type, status, reason, message]) => {
    const before = previous?.find((c) => c.type === type);
    const since = before?.status === status ? before.lastTransitionTime : undefined;
    return {
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now as unknown as Date,
      lastTransitionTime: (since ?? now) as Date,
    };
  });
}

/** The Node this kubelet registers: capacity, the host address only, its log port, a Ready condition. Pure. */
export function buildNode(opts: NodeOptions, machine: MachineInfo, now: string, previous?: V1Node): V1Node {
  const resources: Record<string, string> = {
    cpu: String(machine.cpus),
    memory: `${Math.floor(machine.memoryBytes / 1024)}Ki`,
    pods: String(opts.maxPods ?? 110),
    ...(machine.ephemeralStorageBytes
      ? { 'ephemeral-storage': `${Math.floor(machine.ephemeralStorageBytes / 1024)}Ki` }
      : {}),
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: opts.nodeName,
      labels: {
        'kubernetes.io/hostname': opts.nodeName,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': machine.architecture,
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': machine.architecture,
        'khrun.io/process-kubelet': 'true',
      },
    },
    spec: { ...(opts.taints?.length ? { taints: opts.taints } : {}) },
    status: {
      capacity: resources,
      allocatable: resources,
      addresses: [{ type: 'InternalIP', address: opts.hostIp }],
      daemonEndpoints: { kubeletEndpoint: { Port: opts.kubeletPort } },
      conditions: healthyConditions(previous?.status?.conditions, now),
      nodeInfo: {
        machineID: machine.machineID,
        systemUUID: machine.machineID,
        bootID: machine.bootID,
        kernelVersion: machine.kernelVersion,
        osImage: machine.osImage,
        containerRuntimeVersion: 'khrun-process://1',
        kubeletVersion: opts.kubeletVersion,
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: machine.architecture,
      },
    },
  };
}

/** What a Node as read needs from us: a status write (not Ready, or stale fields) and/or taints removed. Pure. */
export function nodeRepairs(
  node: V1Node,
  desired: V1Node,
): { status: boolean; taints: V1Taint[] | undefined } {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const status =
    ready?.status !== 'True' ||
    node.status?.daemonEndpoints?.kubeletEndpoint?.Port !==
      desired.status?.daemonEndpoints?.kubeletEndpoint?.Port ||
    JSON.stringify(node.status?.addresses) !== JSON.stringify(desired.status?.addresses);
  const taints = node.spec?.taints ?? [];
  const kept = taints.filter((t) => !LIFECYCLE_TAINTS.has(t.key));
  return { status, taints: kept.length === taints.length ? undefined : kept };
}

/**
 * Keeps the Node registered and Ready: creates it (or, when it exists from an earlier run, rewrites its
 * status), then watches it and repairs what the node lifecycle controller or anyone else changed: a Ready
 * condition that is not True, the not-ready/unreachable taints, a deleted Node. Runs until the signal aborts.
 */
export async function maintainNode(opts: {
  kc: KubeConfig;
  desired: (previous?: V1Node) => V1Node;
  signal: AbortSignal;
  log: (line: string, fields?: Record<string, unknown>) => void;
  /** Called with the Node as it exists (created now or left by an earlier run), at every repair. */
  onRegistered: (node: V1Node) => void;
}): Promise<void> {
  const core = opts.kc.makeApiClient(CoreV1Api);
  const name = opts.desired().metadata!.name!;
  let busy = false;
  let again: V1Node | null | undefined;
  let retryMs = 500;
  let retryTimer: NodeJS.Timeout | undefined;
  opts.signal.addEventListener('abort', () => clearTimeout(retryTimer), { once: true });

  const repair = async (current: V1Node | null) => {
    if (current === null) {
      const created = await core.createNode({ body: opts.desired() }).catch(async (error: unknown) => {
        if (!isAlreadyExists(error)) throw error;
        return core.readNode({ name });
      });
      opts.log('node registered', { node: name });
      current = created;
    }
    opts.onRegistered(current);
    const desired = opts.desired(current);
    const todo = nodeRepairs(current, desired);
    if (todo.taints) {
      await core.patchNode(
        {
          name,
          body: {
            metadata: { resourceVersion: current.metadata?.resourceVersion },
            spec: { taints: todo.taints },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      opts.log('node lifecycle taints removed', { node: name });
      return;
    }
    if (todo.status) {
      await core.replaceNodeStatus({
        name,
        body: { ...current, status: { ...current.status, ...desired.status } },
      });
      opts.log('node status written', { node: name });
    }
  };
  const schedule = (current: V1Node | null) => {
    if (busy) {
      again = current;
      return;
    }
    busy = true;
    void repair(current)
      .then(() => {
        retryMs = 500;
      })
      .catch((error: unknown) => {
        // A conflict means the Node changed: its next watch event brings us back here. Anything else
        // (the API server restarting, say) is retried with back-off, unless a newer event comes first.
        if (isConflict(error) || isNotFound(error)) return;
        opts.log('node repair failed; retrying', { error: apiErrorMessage(error), retryInMs: retryMs });
        clearTimeout(retryTimer);
        retryTimer = setTimeout(() => {
          if (again === undefined && !opts.signal.aborted) schedule(current);
        }, retryMs);
        retryMs = Math.min(retryMs * 2, 10_000);
      })
      .finally(() => {
        busy = false;
        const next = again;
        again = undefined;
        if (next !== undefined && !opts.signal.aborted) schedule(next);
      });
  };

  await runListWatch<V1Node>({
    kc: opts.kc,
    path: '/api/v1/nodes',
    fieldSelector: `metadata.name=${name}`,
    signal: opts.signal,
    onChange: (items) => schedule(items.get(`/${name}`) ?? null),
    onInterruption: (reason) => opts.log('node watch interrupted', { reason }),
  });
}
