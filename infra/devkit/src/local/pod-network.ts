import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

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

/**
 * A short sh script run as one process: the kubelet is a large Node process, and forking it for each ip
 * command was most of its thread's time when a thousand pods started at once (spawn: 36% of its samples);
 * sh forks the small ip processes instead. args are $1... in the script; only names and addresses of ours.
 */
function shScript(script: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', script, 'khrun-pod-network', ...args], (error, _stdout, stderr) => {
      if (!error) return resolve();
      const why = stderr.trim() || String(error);
      reject(new Error(`pod network (${args.join(' ')}): ${why}`, { cause: error }));
    });
  });
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

/** Creates the pod's network namespace with address podIp on eth0 and loopback up. */
export async function createPodNetwork(
  net: PodNetwork,
  podUid: string,
  podIp: string,
): Promise<{ netns: string }> {
  const { netns, hostVeth } = podNetworkNames(net, podUid);
  // What an earlier attempt left (a kubelet restarted midway) is removed first; a fresh pod has nothing.
  await deletePodNetwork(net, podUid);
  // `ip -batch` runs the host side's commands, then the namespace side's, in two ip processes under one sh.
  const host = [
    `netns add ${netns}`,
    `link add ${hostVeth} type veth peer name eth0 netns ${netns}`,
    `link set ${hostVeth} master ${net.bridge}`,
    `link set ${hostVeth} up`,
  ];
  const inside = [`addr add ${podIp}/${net.prefixLength} dev eth0`, 'link set eth0 up', 'link set lo up'];
  try {
    await shScript('printf "%s\\n" "$2" | ip -batch - && printf "%s\\n" "$3" | ip -n "$1" -batch -', [
      netns,
      host.join('\n'),
      inside.join('\n'),
    ]);
  } catch (error) {
    await deletePodNetwork(net, podUid);
    throw error;
  }
  return { netns };
}

/**
 * SIGKILLs every process still in the namespace (grandchildren that left their process group too), then
 * removes it, which takes its veth end and so the pair; the host end is removed too when it outlived it.
 * One sh process, none when there is nothing to remove. Idempotent; never throws.
 */
export async function deletePodNetwork(net: PodNetwork, podUid: string): Promise<void> {
  const { netns, hostVeth } = podNetworkNames(net, podUid);
  if (!existsSync(join(NETNS_DIR, netns)) && !existsSync(join('/sys/class/net', hostVeth))) return;
  await shScript(
    'if [ -e "/run/netns/$1" ]; then for p in $(ip netns pids "$1"); do kill -9 "$p"; done; ip netns del "$1"; fi; ' +
      'if [ -e "/sys/class/net/$2" ]; then ip link del "$2"; fi; exit 0',
    [netns, hostVeth],
  ).catch(() => undefined);
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
