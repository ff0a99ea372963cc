import { createHash, randomBytes } from 'node:crypto';
import { appendFile, mkdir, open, readdir, readFile, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { abortableDelay } from '../../../../../lib/core/abort.ts';

/** Where kubelets on this machine record the host mount points they use (a tmpfs: cleared at boot). */
export const DEFAULT_MOUNT_POINT_REGISTRY = '/run/khrun/mount-points';

const LOCK_TIMEOUT_MS = 60_000;

/**
 * In-process queue in front of the machine-wide lock: dozens of pods starting at once in one kubelet
 * would otherwise all poll the lock directory, and the unlucky ones starve past the timeout (seen with 50
 * pods at once: StartError "stays locked"). One waiter per process polls; the rest wait their turn here.
 */
const processQueues = new Map<string, Promise<unknown>>();

/**
 * Mount points the kubelet had to create on the host. A bind mount needs its target to exist, and a
 * pod's private mount namespace shares the host's file systems, so `/var/run/secrets/kubernetes.io/...`
 * or `/dev/termination-log` may have to be created on the host first.
 *
 * Several kubelets (several local clusters, or a test's own kubelet) may use the same path, and removing
 * a path that is a mount point in another process's namespace silently detaches that mount there. So
 * each path has a machine-wide record: which levels a khrun kubelet created, and which kubelets use it.
 * removeAll() drops this kubelet's use of every path; the last user (live processes only count) removes
 * the created levels: empty directories and empty files only, newest first.
 */
export class HostMountPoints {
  private readonly owner = `${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly held = new Map<string, Promise<void>>();

  constructor(private readonly registryDir = DEFAULT_MOUNT_POINT_REGISTRY) {}

  /** Ensures a directory exists for mounting onto. */
  ensureDir(path: string): Promise<void> {
    return this.acquire(resolve(path), 'dir');
  }

  /** Ensures a file exists (an empty one when created here), for mounting a file onto it. */
  ensureFile(path: string): Promise<void> {
    return this.acquire(resolve(path), 'file');
  }

  get paths(): readonly string[] {
    return [...this.held.keys()];
  }

  /** Gives up every path; removes those no other live kubelet uses. Best effort, never throws. */
  async removeAll(): Promise<void> {
    const paths = [...this.held.keys()];
    this.held.clear();
    for (const path of paths) await this.withLock(() => this.release(path)).catch(() => undefined);
    // The registry itself goes when nothing is left in it (another kubelet may hold it meanwhile: then not).
    await rmdir(this.registryDir).catch(() => undefined);
    await rmdir(dirname(this.registryDir)).catch(() => undefined);
  }

  private async acquire(path: string, kind: 'dir' | 'file'): Promise<void> {
    const held = this.held.get(path);
    // Registered before and still there: nothing to do. Gone (removed by someone outside the registry):
    // register again, which re-creates it.
    if (
      held &&
      (await held.then(
        () => exists(path),
        () => false,
      ))
    )
      return;
    const registering = this.withLock(() => this.register(path, kind));
    this.held.set(path, registering);
    registering.catch(() => this.held.delete(path));
    return registering;
  }

  private entryDir(path: string): string {
    return join(this.registryDir, createHash('sha256').update(path).digest('hex').slice(0, 24));
  }

  private async register(path: string, kind: 'dir' | 'file'): Promise<void> {
    const entry = this.entryDir(path);
    await mkdir(join(entry, 'users'), { recursive: true });
    await writeFile(join(entry, 'path'), path);
    await writeFile(join(entry, 'users', this.owner), '');
    const created = kind === 'dir' ? await createDirLevels(path) : await createFile(path);
    if (created.length > 0) await appendFile(join(entry, 'created'), created.map((p) => `${p}\n`).join(''));
  }

  private async release(path: string): Promise<void> {
    const entry = this.entryDir(path);
    await rm(join(entry, 'users', this.owner), { force: true });
    const users = await readdir(join(entry, 'users')).catch(() => [] as string[]);
    let live = 0;
    for (const user of users) {
      if (pidAlive(Number(user.split('-')[0]))) live++;
      else await rm(join(entry, 'users', user), { force: true });
    }
    if (live > 0) return;
    const created = (await readFile(join(entry, 'created'), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean);
    for (const level of [...new Set(created)].sort((a, b) => b.length - a.length)) await removeIfEmpty(level);
    await rm(entry, { recursive: true, force: true });
  }

  /** Serialises this process's users of the lock, then takes the machine-wide one. */
  private withLock<T>(fn: () => Promise<T>): Promise<T> {
    const previous = processQueues.get(this.registryDir) ?? Promise.resolve();
    const mine = previous.catch(() => undefined).then(() => this.withMachineLock(fn));
    processQueues.set(
      this.registryDir,
      mine.catch(() => undefined),
    );
    return mine;
  }

  /** A machine-wide mutex: mkdir is atomic; a lock whose holder died is broken. */
  private async withMachineLock<T>(fn: () => Promise<T>): Promise<T> {
    const lock = join(this.registryDir, '.lock');
    const deadline = Date.now() + LOCK_TIMEOUT_MS;
    for (let delayMs = 5; ; delayMs = Math.min(delayMs * 2, 100)) {
      try {
        await mkdir(this.registryDir, { recursive: true });
        await mkdir(lock);
        break;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue; // the registry was removed between the two mkdirs
        if (code !== 'EEXIST') throw error;
        const holder = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => ''));
        // A holder that died, or one killed between taking the lock and writing its pid (no pid for 5 s).
        const orphaned =
          holder > 0
            ? !pidAlive(holder)
            : Date.now() - ((await stat(lock).catch(() => undefined))?.mtimeMs ?? Date.now()) > 5_000;
        if (orphaned) await rm(lock, { recursive: true, force: true });
        else if (Date.now() > deadline) throw new Error(`the mount-point registry ${lock} stays locked`);
        else await abortableDelay(delayMs);
      }
    }
    try {
      await writeFile(join(lock, 'pid'), String(process.pid));
      return await fn();
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }
}

/** mkdir -p, returning each level it created, outermost first. */
async function createDirLevels(path: string): Promise<string[]> {
  const first = await mkdir(path, { recursive: true });
  if (first === undefined) return [];
  const levels: string[] = [];
  for (let p = path; p.length >= first.length; p = dirname(p)) {
    levels.unshift(p);
    if (p === first || p === '/') break;
  }
  return levels;
}

async function createFile(path: string): Promise<string[]> {
  const levels = await createDirLevels(dirname(path));
  try {
    const handle = await open(path, 'wx');
    await handle.close();
    return [...levels, path];
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return levels;
  }
}

async function removeIfEmpty(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info) return;
  if (info.isDirectory()) await rmdir(path).catch(() => undefined);
  else if (info.isFile() && info.size === 0) await rm(path, { force: true });
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
