import { execFile, spawn } from 'node:child_process';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { countRequests, waitForAuditFlush } from './audit.ts';
import { type BenchCluster, repoRoot } from './bench-cluster.ts';
import { type Summary, summarize } from './stats.ts';

const run = promisify(execFile);

export interface BundleFigure {
  file: string;
  bytes: number;
  importMs: Summary;
}

/** Each bundle's size and the time to import it in a fresh Node process (module load only). */
export async function measureBundles(reps: number): Promise<BundleFigure[]> {
  const dist = join(repoRoot, 'dist');
  const files = (await readdir(dist).catch(() => [] as string[])).filter((f) => f.endsWith('.mjs'));
  const figures: BundleFigure[] = [];
  for (const file of files) {
    const path = join(dist, file);
    const samples: number[] = [];
    for (let i = 0; i < reps; i++) {
      // The CLI bundle runs its main on import (no command: usage, exit 2); only the timing line matters.
      const { stdout } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const t = performance.now(); await import(${JSON.stringify(path)}).catch(() => {}); console.log(performance.now() - t);`,
        ],
        { timeout: 30_000 },
      ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
      samples.push(Number(stdout.trim().split('\n').pop()));
    }
    figures.push({ file, bytes: (await stat(path)).size, importMs: summarize(samples) });
  }
  return figures;
}

/**
 * `khrun run`'s time from process spawn to its first API request, as the API server's audit log saw it.
 * The entrypoint is the bundle when built (dist/khrun.mjs), else the TypeScript CLI through tsx.
 */
export async function measureTimeToFirstRequest(
  bench: BenchCluster,
  user: { kc: KubeConfig; username: string },
  check: string,
  reps: number,
): Promise<{ entry: string; ms: Summary }> {
  const bundle = join(repoRoot, 'dist/khrun.mjs');
  const entry = (await stat(bundle).catch(() => undefined)) ? bundle : join(repoRoot, 'functions/khrun.mjs');
  const kubeconfig = join(bench.cluster.dir, `bench-${user.username.split(':').pop()}.kubeconfig`);
  await writeFile(kubeconfig, user.kc.exportConfig(), { mode: 0o600 });
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const spawnedAtMs = Date.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [entry, 'run', '--check', check, '--namespace', bench.namespace],
        {
          env: {
            ...process.env,
            KUBECONFIG: kubeconfig,
            KHRUN_REPORT_HOST: bench.cluster.hostIp,
            POWERTOOLS_LOG_LEVEL: 'ERROR',
          },
          stdio: 'ignore',
        },
      );
      child.once('error', reject);
      child.once('exit', () => resolve());
    });
    const endMs = Date.now();
    const markerAtMs = Date.now();
    await user.kc.makeApiClient((await import('@kubernetes/client-node')).VersionApi).getCode();
    await waitForAuditFlush(bench.auditLog, user.username, markerAtMs);
    const counted = await countRequests(bench.auditLog, user.username, spawnedAtMs, endMs);
    if (counted.firstAtMs !== undefined) samples.push(counted.firstAtMs - spawnedAtMs);
  }
  return { entry: entry.replace(`${repoRoot}/`, ''), ms: summarize(samples) };
}
