import { execFileSync, spawn } from 'node:child_process';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, KubeConfig, type V1Job } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { repoRoot } from './helpers/khrun.ts';

const lockPath = join(tmpdir(), 'khrun-local-cluster-0.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Slot 0 belongs to `khrun local up`; a developer's own running cluster makes this test meaningless. */
async function slotZeroHolder(): Promise<number | undefined> {
  const record = JSON.parse(await readFile(lockPath, 'utf8').catch(() => '{}')) as { pid?: number };
  return record.pid && alive(record.pid) ? record.pid : undefined;
}

function startLocalUp(dir: string) {
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'functions/khrun.mjs'), 'local', 'up', '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const line = stdout.split('\n').find((l) => l.startsWith('local cluster ready'));
      if (line) resolve(line);
    });
    void exited.then((code) =>
      reject(new Error(`khrun local up exited (${code}) before it was ready:\n${stderr}`)),
    );
  });
  // The second instance is expected never to be ready: its rejection is handled here, and still seen by
  // anyone who awaits `ready`.
  ready.catch(() => undefined);
  return { child, ready, exited, output: () => ({ stdout, stderr }) };
}

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('khrun local up', () => {
  it('runs a Job with its kubeconfig, refuses a second instance, and leaves nothing behind on SIGINT', async (ctx) => {
    const holder = await slotZeroHolder();
    if (holder) {
      if (process.env.CI) throw new Error(`slot 0 is held by pid ${holder} on a CI machine`);
      ctx.skip(`a local cluster of yours is running (pid ${holder}); stop it to run this test`);
    }
    const dir = await mkdtemp(join(tmpdir(), 'khrun-local-up-'));
    const second = await mkdtemp(join(tmpdir(), 'khrun-local-up-2-'));
    dirs.push(dir, second);
    const first = startLocalUp(dir);
    try {
      const line = await first.ready;
      expect(line).toMatch(new RegExp(`export KUBECONFIG=${dir}/kubeconfig`));
      const lock = JSON.parse(await readFile(lockPath, 'utf8')) as { dir: string; childPids: number[] };
      expect(lock.childPids.length).toBeGreaterThanOrEqual(4);

      const kc = new KubeConfig();
      kc.loadFromFile(join(dir, 'kubeconfig'));
      const job: V1Job = {
        metadata: { name: 'hello' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [
                { name: 'hello', image: 'busybox', command: ['sh', '-c', 'echo hello from a local process'] },
              ],
            },
          },
        },
      };
      await kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: 'default', body: job });
      await waitForSet<V1Job, true>({
        kc,
        path: '/apis/batch/v1/namespaces/default/jobs',
        fieldSelector: 'metadata.name=hello',
        timeoutMs: 60_000,
        description: 'the Job to complete',
        decide: (items) =>
          [...items.values()].some((j) =>
            j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
          )
            ? true
            : undefined,
      });

      const other = startLocalUp(second);
      expect(await other.exited).not.toBe(0);
      expect(other.output().stdout + other.output().stderr).toMatch(
        /a local cluster is already running \(pid \d+/,
      );

      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
      for (const pid of lock.childPids) expect(alive(pid), `pid ${pid} still running`).toBe(false);
      await expect(access(lock.dir)).rejects.toThrow();
      await expect(access(lockPath)).rejects.toThrow();
      const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
      expect(netns).not.toMatch(/^khrun0-/m);
      expect(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })).not.toMatch(/ khrun0:/);
    } finally {
      first.child.kill('SIGKILL');
    }
  });
});
