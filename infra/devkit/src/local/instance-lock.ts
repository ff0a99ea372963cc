import { open, readFile, rm, writeFile } from 'node:fs/promises';

export interface LockRecord {
  pid: number;
  dir: string;
  kubeconfigPath?: string;
  /** Child processes to reap if the owner died without stopping them. */
  childPids: number[];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * One local cluster per pod-network slot: a slot's network has fixed names. The lock file records the owner and
 * its children, so a cluster whose owner was killed is cleaned up by the next start instead of blocking it.
 */
export async function acquireInstanceLock(
  lockPath: string,
  record: LockRecord,
  reapStale: (stale: LockRecord) => Promise<void>,
): Promise<{ update(r: Partial<LockRecord>): Promise<void>; release(): Promise<void> }> {
  const path = lockPath;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(JSON.stringify(record));
      await handle.close();
      let current = record;
      return {
        async update(r) {
          current = { ...current, ...r };
          await writeFile(path, JSON.stringify(current));
        },
        async release() {
          await rm(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const existing = JSON.parse(await readFile(path, 'utf8').catch(() => '{}')) as Partial<LockRecord>;
      if (existing.pid && existing.pid !== process.pid && alive(existing.pid)) {
        throw new Error(
          `a local cluster is already running (pid ${existing.pid}, kubeconfig ${existing.kubeconfigPath ?? 'not yet written'}); ` +
            'use it, or stop it (Ctrl-C in its terminal, or kill ' +
            `${existing.pid}) before starting another`,
        );
      }
      await reapStale({
        pid: existing.pid ?? 0,
        dir: existing.dir ?? '',
        childPids: existing.childPids ?? [],
      });
      await rm(path, { force: true });
    }
  }
  throw new Error(`could not take the local cluster lock ${path}`);
}

export function killIfAlive(pid: number): void {
  if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
}
