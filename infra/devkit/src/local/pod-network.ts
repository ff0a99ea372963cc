import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { shellQuote } from './shell-quote.ts';

const run = promisify(execFile);

/**
 * The local cluster's pod network: a bridge on the host holding the host's pod-network address, and per
 * pod a network namespace joined to it by a veth pair. Pods get no default route: they can reach the host
 * side (API server proxy, report servers) and each other, and nothing else. Each of a few slots has its own
 * bridge and /16, so that more than one local cluster can run on a machine (one per slot).
 */
export interface PodNetwork {
  slot: number;
  bridge: string;
  hostIp: string;
  prefixLength: number;
  podIpRange: { first: string; last: string };
  /** Prefix of the network namespaces of this slot's pods. */
  netnsPrefix: string;
}

export const POD_NETWORK_SLOTS = 8;

/** Where `ip netns add` mounts a named namespace. */
const NETNS_DIR = '/run/netns';

/** Slot n uses bridge khrun<n> and 10.(213+n).0.0/16; pods get 10.(213+n).<1..254>.<1..254>. */
export function podNetworkForSlot(slot: number): PodNetwork {
  if (!Number.isInteger(slot) || slot < 0 || slot >= POD_NETWORK_SLOTS) {
    throw new Error(`pod network slot must be 0..${POD_NETWORK_SLOTS - 1}, not ${slot}`);
  }
  const second = 213 + slot;
  return {
    slot,
    bridge: `khrun${slot}`,
    hostIp: `10.${second}.0.1`,
    prefixLength: 16,
    podIpRange: { first: `10.${second}.1.1`, last: `10.${second}.254.254` },
    netnsPrefix: `khrun${slot}-`,
  };
}

async function ip(args: string[]): Promise<string> {
  try {
    const { stdout } = await run('ip', args);
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`ip ${args.join(' ')} failed: ${stderr || String(error)}`, { cause: error });
  }
}

/** Creates the bridge with the host's address. Fails clearly when not root or without iproute2. */
export async function createHostBridge(net: PodNetwork): Promise<void> {
  const { bridge, hostIp, prefixLength } = net;
  await deleteHostBridge(net);
  try {
    await ip(['link', 'add', bridge, 'type', 'bridge']);
  } catch (error) {
    throw new Error(
      'the local cluster needs root and iproute2 to create its pod network (a bridge and a network namespace ' +
        'per pod); run as root with the ip command installed (apt-get install iproute2)',
      { cause: error },
    );
  }
  // A bridge takes the lowest MAC of its ports unless it has one of its own: each pod's veth joining or
  // leaving would then change the host address's MAC under the pods' ARP caches, and their connections
  // to the host would stall for tens of seconds. A fixed, locally administered MAC per slot.
  await ip(['link', 'set', bridge, 'address', `02:6b:68:72:75:${net.slot.toString(16).padStart(2, '0')}`]);
  await ip(['addr', 'add', `${hostIp}/${prefixLength}`, 'dev', bridge]);
  await ip(['link', 'set', bridge, 'up']);
}

export async function deleteHostBridge(net: PodNetwork): Promise<void> {
  await ip(['link', 'del', net.bridge]).catch(() => undefined);
}

/** Names that fit IFNAMSIZ (15) and are stable for a pod UID, so a restarted kubelet finds them again. */
export function podNetworkNames(net: PodNetwork, podUid: string): { netns: string; hostVeth: string } {
  const short = createHash('sha256').update(podUid).digest('hex').slice(0, 10);
  return { netns: `${net.netnsPrefix}${short}`, hostVeth: `khv${short}` };
}

/** A pod network's setup (its namespace with podIp on eth0, loopback up) or removal. */
export type PodNetworkOp =
  | { kind: 'create'; podUid: string; podIp: string }
  | { kind: 'delete'; podUid: string };

/**
 * The sh functions of a batch. del: SIGKILLs every process still in the namespace (grandchildren that left
 * their process group too), then removes it, which takes its veth end and so the pair; the host end is
 * removed too when it outlived it; never fails. add: what an earlier attempt left is removed first (a
 * kubelet restarted midway; a fresh pod has nothing), then `ip -batch` runs the host side's commands and
 * the namespace side's; on failure it removes what it made. Each op prints one line: `<n> ok` or
 * `<n> fail <why>`.
 */
const OPS_PRELUDE = [
  'del() { if [ -e "/run/netns/$1" ]; then for p in $(ip netns pids "$1"); do kill -9 "$p"; done; ip netns del "$1"; fi; if [ -e "/sys/class/net/$2" ]; then ip link del "$2"; fi; return 0; }',
  'add() { del "$2" "$3"; if err=$( { printf "%s\\n" "$4" | ip -batch - && printf "%s\\n" "$5" | ip -n "$2" -batch -; } 2>&1 ); then echo "$1 ok"; else del "$2" "$3"; echo "$1 fail $(printf "%s" "$err" | tr "\\n" " ")"; fi; }',
];

/** The one sh script of a batch of ops, in their order (pure). */
export function podNetworkScript(net: PodNetwork, ops: readonly PodNetworkOp[]): string {
  const lines = [...OPS_PRELUDE];
  ops.forEach((op, i) => {
    const { netns, hostVeth } = podNetworkNames(net, op.podUid);
    if (op.kind === 'delete') {
      lines.push(`del ${shellQuote(netns)} ${shellQuote(hostVeth)}; echo "${i} ok"`);
      return;
    }
    const host = [
      `netns add ${netns}`,
      `link add ${hostVeth} type veth peer name eth0 netns ${netns}`,
      `link set ${hostVeth} master ${net.bridge}`,
      `link set ${hostVeth} up`,
    ];
    const inside = [
      `addr add ${op.podIp}/${net.prefixLength} dev eth0`,
      'link set eth0 up',
      'link set lo up',
    ];
    lines.push(
      `add ${i} ${shellQuote(netns)} ${shellQuote(hostVeth)} ${shellQuote(host.join('\n'))} ${shellQuote(inside.join('\n'))}`,
    );
  });
  return lines.join('\n');
}

/** Per op of the batch, undefined when it was done, else why not, from the script's output (pure). */
export function podNetworkResults(
  count: number,
  stdout: string,
  failure?: string,
): Array<string | undefined> {
  const results: Array<string | undefined> = Array.from(
    { length: count },
    () => failure ?? 'the pod network script ended before this step',
  );
  for (const line of stdout.split('\n')) {
    const match = /^(\d+) (ok|fail)(?: (.*))?$/.exec(line.trim());
    if (!match || Number(match[1]) >= count) continue;
    results[Number(match[1])] = match[2] === 'ok' ? undefined : match[3]?.trim() || 'ip failed';
  }
  return results;
}

/** Runs a command to its end, capturing its output (Spawner.run's shape). */
export type RunCommand = (
  command: string,
  args: string[],
) => Promise<{ error?: string; stdout: string; stderr: string }>;

const execFileCommand: RunCommand = (command, args) =>
  new Promise((resolve) => {
    execFile(command, args, (error, stdout, stderr) =>
      resolve({ ...(error ? { error: String(error) } : {}), stdout, stderr }),
    );
  });

/**
 * Runs a batch of pod network setups and removals in one sh process, which forks the small ip processes.
 * One spawn per setup and per removal from the kubelet was over a fifth of its thread's time with a
 * thousand pods (the node alone, 1,000 pods, profiled); the kubelet passes its Spawner as `run`, so not
 * even the batch's sh is forked from the kubelet. Never throws: per op, undefined or why it failed.
 */
export function runPodNetworkOps(
  net: PodNetwork,
  ops: readonly PodNetworkOp[],
  run: RunCommand = execFileCommand,
): Promise<Array<string | undefined>> {
  if (ops.length === 0) return Promise.resolve([]);
  return run('sh', ['-c', podNetworkScript(net, ops)]).then(({ error, stdout, stderr }) => {
    const failure = error ? `pod network script failed: ${stderr.trim() || error}` : undefined;
    return podNetworkResults(ops.length, stdout, failure);
  });
}

/** Whether anything of the pod's network is left to remove (no process needed to find out). */
export function podNetworkExists(net: PodNetwork, podUid: string): boolean {
  const { netns, hostVeth } = podNetworkNames(net, podUid);
  return existsSync(join(NETNS_DIR, netns)) || existsSync(join('/sys/class/net', hostVeth));
}

/** Every namespace a khrun cluster created; used to clean up after a cluster that was killed. */
export async function listPodNetworks(net: PodNetwork): Promise<string[]> {
  const out = await ip(['netns', 'list']).catch(() => '');
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(net.netnsPrefix));
}

export async function deleteNetnsByName(name: string): Promise<void> {
  await ip(['netns', 'del', name]).catch(() => undefined);
}

/** Every process living in a network namespace, whoever started it. */
export async function netnsPids(name: string): Promise<number[]> {
  const out = await ip(['netns', 'pids', name]).catch(() => '');
  return out
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}
