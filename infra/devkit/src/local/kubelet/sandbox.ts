import { limiter } from '../../../../../lib/core/limit.ts';
import { createPodNetwork, deletePodNetwork, netnsPids, type PodNetwork } from '../pod-network.ts';

/** A pod's network sandbox: its own namespace and address, or the host's for hostNetwork pods. */
export interface Sandbox {
  podIp: string;
  /** undefined for hostNetwork pods. */
  netns?: string;
}

/** The pod-network operations the kubelet uses; a port so tests of the worker need no root. */
export interface SandboxOps {
  create(podUid: string, podIp: string): Promise<{ netns: string }>;
  /** SIGKILLs every process left in the namespace, then removes it and its veth; idempotent. */
  delete(podUid: string): Promise<void>;
  /** Every process that lives in the namespace, whoever started it. */
  pids(netns: string): Promise<number[]>;
}

/**
 * Pod networks made and removed at most this many at a time. A thousand checker pods created within a
 * minute (the 1,000-check scale bench) set up a thousand sandboxes at once: thousands of ip processes
 * forked from the kubelet, the kernel's namespace and mount locks contended, and no pod got through for
 * minutes. A kubelet's runtime serializes much the same way (CNI calls, image pulls).
 */
export const SANDBOX_SETUPS_AT_ONCE = 4;

/**
 * `raw`'s create and delete, at most `max` at a time, a removal ahead of every waiting setup. Every live
 * network namespace is a mount that each container's private mount namespace copies, so a setup slows
 * with each one alive: with removals queued behind a thousand setups, the node held about a thousand
 * namespaces by the end and the last pods started far later (the node alone, 1,000 pods: 130.7 s with
 * removals in turn, 90.8 s with removals first; the fleet section of docs/performance.md).
 */
export const queuedSandboxOps = (raw: SandboxOps, max = SANDBOX_SETUPS_AT_ONCE): SandboxOps => {
  const limit = limiter(max);
  return {
    create: (podUid, podIp) => limit(() => raw.create(podUid, podIp)),
    delete: (podUid) => limit(() => raw.delete(podUid), { first: true }),
    pids: raw.pids,
  };
};

export const linuxSandboxOps = (net: PodNetwork): SandboxOps =>
  queuedSandboxOps({
    create: (podUid, podIp) => createPodNetwork(net, podUid, podIp),
    delete: (podUid) => deletePodNetwork(net, podUid),
    pids: netnsPids,
  });

/** SIGKILLs every process left in the namespace (grandchildren that left their process group, too). */
export async function killAllInNetns(ops: SandboxOps, netns: string): Promise<void> {
  for (const pid of await ops.pids(netns)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}
