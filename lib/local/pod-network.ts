import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The local cluster's pod network: a bridge on the host holding the host's pod-network address, and per
 * pod a network namespace joined to it by a veth pair. Pods get no default route: they can reach the host
 * side (API server proxy, report servers) and each other, and nothing else.
 */
export const POD_NETWORK = {
  bridge: 'khrun0',
  hostIp: '10.213.0.1',
  prefixLength: 16,
  /** Pod addresses are 10.213.<1..254>.<1..254>. */
  podBase: [10, 213],
} as const;

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
export async function createHostBridge(): Promise<void> {
  const { bridge, hostIp, prefixLength } = POD_NETWORK;
  await deleteHostBridge();
  try {
    await ip(['link', 'add', bridge, 'type', 'bridge']);
  } catch (error) {
    throw new Error(
      'the local cluster needs root and iproute2 to create its pod network (a bridge and a network namespace ' +
        'per pod); run as root with the ip command installed (apt-get install iproute2)',
      { cause: error },
    );
  }
  await ip(['addr', 'add', `${hostIp}/${prefixLength}`, 'dev', bridge]);
  await ip(['link', 'set', bridge, 'up']);
}

export async function deleteHostBridge(): Promise<void> {
  await ip(['link', 'del', POD_NETWORK.bridge]).catch(() => undefined);
}

/** Names that fit IFNAMSIZ (15) and are stable for a pod UID, so a restarted kubelet finds them again. */
export function podNetworkNames(podUid: string): { netns: string; hostVeth: string } {
  const short = createHash('sha256').update(podUid).digest('hex').slice(0, 10);
  return { netns: `khrun-${short}`, hostVeth: `khv${short}` };
}

/** Creates the pod's network namespace with address podIp on eth0 and loopback up. */
export async function createPodNetwork(podUid: string, podIp: string): Promise<{ netns: string }> {
  const { netns, hostVeth } = podNetworkNames(podUid);
  await deletePodNetwork(podUid);
  await ip(['netns', 'add', netns]);
  try {
    await ip(['link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    await ip(['link', 'set', hostVeth, 'master', POD_NETWORK.bridge]);
    await ip(['link', 'set', hostVeth, 'up']);
    await ip(['-n', netns, 'addr', 'add', `${podIp}/${POD_NETWORK.prefixLength}`, 'dev', 'eth0']);
    await ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
    await ip(['-n', netns, 'link', 'set', 'lo', 'up']);
  } catch (error) {
    await deletePodNetwork(podUid);
    throw error;
  }
  return { netns };
}

/** Removes the namespace (which takes its veth end, and so the pair, with it). Idempotent. */
export async function deletePodNetwork(podUid: string): Promise<void> {
  const { netns, hostVeth } = podNetworkNames(podUid);
  await ip(['netns', 'del', netns]).catch(() => undefined);
  await ip(['link', 'del', hostVeth]).catch(() => undefined);
}

/** Every namespace a khrun cluster created; used to clean up after a cluster that was killed. */
export async function listPodNetworks(): Promise<string[]> {
  const out = await ip(['netns', 'list']).catch(() => '');
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith('khrun-'));
}

export async function deleteNetnsByName(name: string): Promise<void> {
  await ip(['netns', 'del', name]).catch(() => undefined);
}
