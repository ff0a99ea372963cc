import {
  netnsPids,
  type PodNetwork,
  type PodNetworkOp,
  podNetworkExists,
  podNetworkNames,
  type RunCommand,
  runPodNetworkOps,
} from '../pod-network.ts';

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
 * Batches of pod network setups and removals run at most this many at a time, each of at most
 * SANDBOX_BATCH_MAX ops. A thousand checker pods created within a minute would otherwise set up a thousand
 * sandboxes at once: thousands of ip processes, the kernel's namespace and mount locks contended, and no
 * pod got through for minutes. A kubelet's runtime serializes much the same way (CNI calls, image pulls).
 */
export const SANDBOX_BATCHES_AT_ONCE = 2;
export const SANDBOX_BATCH_MAX = 16;

/** Runs a batch of ops in their order; per op, undefined when done, else why not. */
export type RunSandboxBatch = (ops: readonly PodNetworkOp[]) => Promise<Array<string | undefined>>;

/**
 * Sandbox ops over batches: what waits when a batch slot frees goes in one batch (one process), removals
 * ahead of every waiting setup. Every live network namespace is a mount that each container's private
 * mount namespace copies, so a setup slows with each one alive: with removals queued behind a thousand
 * setups, the node held about a thousand namespaces by the end and the last pods started far later (the
 * node alone, 1,000 pods: 130.7 s with removals in turn, 90.8 s with removals first). Removing a pod that
 * has no network left costs nothing (`exists`).
 */
export function batchedSandboxOps(opts: {
  run: RunSandboxBatch;
  exists: (podUid: string) => boolean;
  netnsOf: (podUid: string) => string;
  pids: (netns: string) => Promise<number[]>;
  batchesAtOnce?: number;
  batchMax?: number;
}): SandboxOps {
  const atOnce = opts.batchesAtOnce ?? SANDBOX_BATCHES_AT_ONCE;
  const max = opts.batchMax ?? SANDBOX_BATCH_MAX;
  type Waiting = { op: PodNetworkOp; settle: (why: string | undefined) => void };
  const deletes: Waiting[] = [];
  const creates: Waiting[] = [];
  let running = 0;
  const pump = () => {
    while (running < atOnce && (deletes.length || creates.length)) {
      const batch = deletes.splice(0, max);
      batch.push(...creates.splice(0, max - batch.length));
      running++;
      void opts
        .run(batch.map((w) => w.op))
        .catch((error: unknown) => batch.map(() => String(error)))
        .then((results) => {
          batch.forEach((w, i) => {
            w.settle(results[i]);
          });
          running--;
          pump();
        });
    }
  };
  const enqueue = (queue: Waiting[], op: PodNetworkOp) =>
    new Promise<string | undefined>((settle) => {
      queue.push({ op, settle });
      pump();
    });
  return {
    async create(podUid, podIp) {
      const why = await enqueue(creates, { kind: 'create', podUid, podIp });
      const netns = opts.netnsOf(podUid);
      if (why !== undefined) throw new Error(`pod network ${netns}: ${why}`);
      return { netns };
    },
    async delete(podUid) {
      if (!opts.exists(podUid)) return;
      await enqueue(deletes, { kind: 'delete', podUid });
    },
    pids: opts.pids,
  };
}

export const linuxSandboxOps = (net: PodNetwork, run?: RunCommand): SandboxOps =>
  batchedSandboxOps({
    run: (ops) => runPodNetworkOps(net, ops, run),
    exists: (podUid) => podNetworkExists(net, podUid),
    netnsOf: (podUid) => podNetworkNames(net, podUid).netns,
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
