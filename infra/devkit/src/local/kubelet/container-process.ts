import { mkdir, stat } from 'node:fs/promises';
import { constants } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { V1Container } from '@kubernetes/client-node';
import { shellQuote } from '../shell-quote.ts';
import type { Spawner } from '../spawner.ts';
import type { HostMountPoints } from './host-paths.ts';
import type { PreparedVolume } from './volumes.ts';

/** One bind mount into a container's private mount namespace. */
export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
  /** The target lies inside another mount of this container: create it there, after that mount. */
  nested: boolean;
}

export interface ContainerLaunch {
  /** The pod's network namespace; undefined for hostNetwork pods. */
  netns?: string;
  /** Set in a private UTS namespace (not for hostNetwork pods, which share the host's). */
  hostname: string;
  argv: string[];
  env: Array<[string, string]>;
  workingDir: string;
  /**
   * workingDir is the kubelet's own directory of the pod (made before the start): nothing to create or
   * register on the host. Registering it went through the machine-wide mount-point lock, one pod at a
   * time, and held 480 of a thousand starting pods in ContainerCreating for minutes.
   */
  ownWorkingDir?: boolean;
  mounts: Mount[];
  /** stdout and stderr both go here. */
  logFile: string;
}

export interface ContainerProcess {
  pid: number;
  /** Resolves when the process has exited; exitCode is 128 + the signal number when a signal ended it. */
  exited: Promise<{ exitCode: number; signal?: number }>;
  /** Signals the container's whole process group; no-op once it has exited. */
  kill(signal: NodeJS.Signals): void;
}

/**
 * The mounts of a container, parents before children: every volumeMount (subPath honoured, read-only
 * when the volume or the mount says so) and the per-container termination-message file. Pure.
 */
export function planMounts(
  container: V1Container,
  volumes: ReadonlyMap<string, PreparedVolume>,
  terminationFile: string,
): Mount[] {
  const mounts: Array<Omit<Mount, 'nested'>> = [];
  for (const vm of container.volumeMounts ?? []) {
    const volume = volumes.get(vm.name);
    if (!volume) throw new Error(`volumeMount ${vm.name} refers to no volume of the pod`);
    mounts.push({
      source: vm.subPath ? join(volume.hostPath, vm.subPath) : volume.hostPath,
      target: vm.mountPath,
      readOnly: volume.readOnly || vm.readOnly === true,
    });
  }
  mounts.push({
    source: terminationFile,
    target: container.terminationMessagePath || '/dev/termination-log',
    readOnly: false,
  });
  const depth = (p: string) => p.split('/').filter(Boolean).length;
  mounts.sort((a, b) => depth(a.target) - depth(b.target));
  return mounts.map((m, i) => ({
    ...m,
    nested: mounts.slice(0, i).some((p) => isUnder(m.target, p.target)),
  }));
}

export function isUnder(path: string, dir: string): boolean {
  const d = dir.endsWith('/') ? dir : `${dir}/`;
  return path.startsWith(d);
}

/** The prelude's exit code and message prefix when a step fails before the command runs. */
export const PRELUDE_FAILED = 128;
export const PRELUDE_MARKER = 'khrun: ';

/**
 * The sh script run inside the container's fresh mount namespace before the command: bind mounts
 * (remounted read-only where asked), hostname, working directory, then `exec "$@"` so the command keeps
 * the pid. A failing step prints why and exits 128, like a runtime's StartError. Pure.
 */
export function buildPrelude(opts: {
  mounts: ReadonlyArray<Mount & { isFile: boolean }>;
  workingDir: string;
  workingDirNested: boolean;
  hostname?: string;
}): string {
  const lines = [`fail() { echo "${PRELUDE_MARKER}$1" >&2; exit ${PRELUDE_FAILED}; }`];
  for (const m of opts.mounts) {
    const src = shellQuote(m.source);
    const dst = shellQuote(m.target);
    if (m.nested) {
      lines.push(
        m.isFile
          ? `mkdir -p "$(dirname ${dst})" && touch ${dst} || fail ${shellQuote(`cannot create ${m.target}`)}`
          : `mkdir -p ${dst} || fail ${shellQuote(`cannot create ${m.target}`)}`,
      );
    }
    lines.push(`mount --bind ${src} ${dst} || fail ${shellQuote(`cannot mount ${m.target}`)}`);
    if (m.readOnly)
      lines.push(
        `mount -o remount,bind,ro ${dst} || fail ${shellQuote(`cannot make ${m.target} read-only`)}`,
      );
  }
  if (opts.hostname)
    lines.push(
      `printf %s ${shellQuote(opts.hostname)} > /proc/sys/kernel/hostname || fail 'cannot set hostname'`,
    );
  const wd = shellQuote(opts.workingDir);
  if (opts.workingDirNested)
    lines.push(`mkdir -p ${wd} || fail ${shellQuote(`cannot create ${opts.workingDir}`)}`);
  lines.push(
    `cd ${wd} || fail ${shellQuote(`cannot enter working directory ${opts.workingDir}`)}`,
    'exec "$@"',
  );
  return lines.join('\n');
}

/** Absolute paths, so the container's own PATH never decides which helper runs. */
export interface Tools {
  ip: string;
  unshare: string;
  sh: string;
}

/**
 * Starts a container as a process in the pod's network namespace (`ip netns exec`, which also gives it a
 * private mount namespace) and its own UTS namespace, in a new session so its process group can be
 * signalled as a whole. Missing mount points are first created on the host and tracked by `hostPaths`.
 * The process is forked by `spawner`'s small helper process, not by the kubelet (see spawner.ts).
 */
export async function spawnContainer(
  launch: ContainerLaunch,
  tools: Tools,
  hostPaths: HostMountPoints,
  spawner: Spawner,
): Promise<ContainerProcess> {
  const mounts: Array<Mount & { isFile: boolean }> = [];
  for (const m of launch.mounts) {
    let info = await stat(m.source).catch(() => undefined);
    if (!info) {
      await mkdir(m.source, { recursive: true }); // a subPath the volume does not have yet, as the kubelet does
      info = await stat(m.source);
    }
    const isFile = !info.isDirectory();
    if (!m.nested) await (isFile ? hostPaths.ensureFile(m.target) : hostPaths.ensureDir(m.target));
    mounts.push({ ...m, isFile });
  }
  if (!isAbsolute(launch.workingDir)) throw new Error(`workingDir ${launch.workingDir} is not absolute`);
  const workingDirNested = launch.mounts.some(
    (m) => launch.workingDir === m.target || isUnder(launch.workingDir, m.target),
  );
  if (!workingDirNested && !launch.ownWorkingDir) await hostPaths.ensureDir(launch.workingDir);
  const prelude = buildPrelude({
    mounts,
    workingDir: launch.workingDir,
    workingDirNested,
    hostname: launch.netns ? launch.hostname : undefined,
  });
  const inner = [tools.sh, '-c', prelude, 'khrun-container', ...launch.argv];
  const argv = launch.netns
    ? ['netns', 'exec', launch.netns, tools.unshare, '--uts', '--', ...inner]
    : [tools.unshare, '--mount', '--propagation', 'slave', '--', ...inner];
  const command = launch.netns ? tools.ip : argv.shift()!;

  const proc = await spawner.start({
    command,
    args: argv,
    env: Object.fromEntries(launch.env),
    logFile: launch.logFile,
  });
  let done = false;
  const exited = proc.exited.then(({ code, signal }) => {
    done = true;
    const number = signal ? constants.signals[signal] : undefined;
    return number ? { exitCode: 128 + number, signal: number } : { exitCode: code ?? 1 };
  });
  const pid = proc.pid;
  return {
    pid,
    exited,
    kill(signal) {
      if (done) return;
      try {
        process.kill(-pid, signal);
      } catch {
        // the group is gone already
      }
    },
  };
}
