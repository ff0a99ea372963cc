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
  /** Removes the namespace and its veth; idempotent. */
  delete(podUid: string): Promise<void>;
  /** Every process that lives in the namespace, whoever started it. */
  pids(netns: string): Promise<number[]>;
}

export const linuxSandboxOps = (net: PodNetwork): SandboxOps => ({
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
