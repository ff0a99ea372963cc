import { execFile, spawn } from 'node:child_process';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readStamp, staleReason } from '@khrun/devkit/build/checkout-stamp.mjs';
import { type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { countRequests, waitForAuditFlush } from './audit.ts';
import { type BenchCluster, repoRoot } from './bench-cluster.ts';
import { type Summary, summarize } from './stats.ts';

const run = promisify(execFile);

export interface BundleFigure {
  file: string;
  /** The file holding the code when it is not `file` (the CLI: khrun.mjs runs khrun.cjs). */
  codeFile?: string;
  /** The size of the code: codeFile's when set. */
  bytes: number;
  importMs: Summary;
}

/** Each bundle's size and the time to import it in a fresh Node process (module load only). */
export async function measureBundles(reps: number, dist: string): Promise<BundleFigure[]> {
  const all = await readdir(dist);
  const files = all.filter((f) => f.endsWith('.mjs'));
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
    const cjs = file.replace(/\.mjs$/, '.cjs');
    const codeFile = all.includes(cjs) ? cjs : undefined;
    figures.push({
      file,
      ...(codeFile ? { codeFile } : {}),
      bytes: (await stat(join(dist, codeFile ?? file))).size,
      importMs: summarize(samples),
    });
  }
  return figures;
}

/** One way to start `khrun run`: what a person types, or what a Job or the benchmark spawns. */
interface CliEntry {
  name: string;
  argv: string[];
  /** Before each sample: e.g. forget the checkout bundle's stamp, as a source edit does. */
  before?: () => Promise<void>;
}

export interface CliStartFigure {
  name: string;
  argv: string;
  /** Spawn to the first API request the API server received from the process (its audit log). */
  firstRequestMs: Summary;
  /** Spawn to exit: the whole `khrun run` of a check that reports at once. */
  exitMs: Summary;
  /** functions/khrun.mjs only: samples that rebuilt the checkout bundle, or ran from source (lock held). */
  launcherPaths?: Record<string, number>;
}

const STAMP = join(repoRoot, '.khrun/cli.json');

/**
 * `khrun run --check CHECK` started each way a person or a deployment starts it, reps times each, one
 * process at a time: spawn to first API request and spawn to exit. functions/khrun.mjs is measured with its
 * bundle current and after a source change (its stamp removed before each sample: rebuild, then run);
 * launcherPaths counts which path each of its samples took.
 */
export async function measureCliStart(
  bench: BenchCluster,
  user: { kc: KubeConfig; username: string },
  check: string,
  opts: { reps: number; dist: string; log: (line: string) => void },
): Promise<{ how: string; entries: CliStartFigure[] }> {
  const kubeconfig = join(bench.cluster.dir, `bench-${user.username.split(':').pop()}.kubeconfig`);
  await writeFile(kubeconfig, user.kc.exportConfig(), { mode: 0o600 });
  const args = ['run', '--check', check, '--namespace', bench.namespace];
  const launcher = join(repoRoot, 'functions/khrun.mjs');
  const entries: CliEntry[] = [
    {
      name: 'node <bench build>/khrun.mjs (the bundle, as the image runs it)',
      argv: [process.execPath, join(opts.dist, 'khrun.mjs')],
    },
    { name: 'npx khrun (checkout bundle current)', argv: ['npx', 'khrun'] },
    { name: 'node functions/khrun.mjs (checkout bundle current)', argv: [process.execPath, launcher] },
    {
      name: 'node functions/khrun.mjs after a source change (rebuilds the checkout bundle, then runs it)',
      argv: [process.execPath, launcher],
      before: () => rm(STAMP, { force: true }),
    },
    {
      name: 'node --import tsx functions/cli.ts (from source, as functions/khrun.mjs ran before issue 15)',
      argv: [process.execPath, '--import', 'tsx', join(repoRoot, 'functions/cli.ts')],
    },
  ];
  // The checkout bundle built once before its figures, so that the first sample is not a build.
  await spawnRun([process.execPath, launcher, 'help'], kubeconfig);
  // Round-robin (one sample of each entry per round), so that a change in the machine's load over the
  // benchmark weighs on every entry alike.
  const samples = entries.map(() => ({
    first: [] as number[],
    exit: [] as number[],
    paths: {} as Record<string, number>,
  }));
  const viaLauncher = (entry: CliEntry) => entry.argv[0] === 'npx' || entry.argv.includes(launcher);
  opts.log(`  ${opts.reps} rounds of: ${entries.map((e) => e.name).join('; ')}`);
  for (let i = 0; i < opts.reps; i++) {
    for (const [k, entry] of entries.entries()) {
      const into = samples[k]!;
      await entry.before?.();
      const stamp = readStamp(repoRoot);
      const current = stamp !== undefined && staleReason(repoRoot, stamp) === undefined;
      const spawnedAtMs = Date.now();
      await spawnRun([...entry.argv, ...args], kubeconfig, bench.cluster.hostIp);
      const exitedAtMs = Date.now();
      const after = readStamp(repoRoot)?.bundle;
      const path = current ? 'bundle current' : after && after !== stamp?.bundle ? 'rebuilt' : 'from source';
      into.paths[path] = (into.paths[path] ?? 0) + 1;
      // Only samples that took the path the entry names: a rebuild because a source changed during the
      // benchmark, or a run from source because another invocation held the build lock, are counted apart.
      if (viaLauncher(entry) && path !== (entry.before ? 'rebuilt' : 'bundle current')) continue;
      const markerAtMs = Date.now();
      await user.kc.makeApiClient(VersionApi).getCode();
      await waitForAuditFlush(bench.auditLog, user.username, markerAtMs);
      const counted = await countRequests(bench.auditLog, user.username, spawnedAtMs, exitedAtMs);
      if (counted.firstAtMs === undefined) throw new Error(`${entry.name}: no API request seen`);
      into.first.push(counted.firstAtMs - spawnedAtMs);
      into.exit.push(exitedAtMs - spawnedAtMs);
    }
  }
  const figures: CliStartFigure[] = entries.map((entry, k) => ({
    name: entry.name,
    argv: [...entry.argv, ...args].join(' ').replaceAll(`${repoRoot}/`, ''),
    firstRequestMs: summarize(samples[k]!.first),
    exitMs: summarize(samples[k]!.exit),
    ...(viaLauncher(entry) ? { launcherPaths: samples[k]!.paths } : {}),
  }));
  return {
    how: `${opts.reps} rounds, each spawning every entry once in turn from the checkout (cwd), one process at a time, node ${process.version}; khrun run --check of a check whose checker reports at once, against the local cluster; first request from the API server's audit log (the CLI's own ServiceAccount), exit from the parent's wall clock; the API server's and this process's clocks are the same machine's`,
    entries: figures,
  };
}

/** Spawns one `khrun` process to completion; a non-zero exit fails the benchmark (nothing was measured). */
async function spawnRun(argv: string[], kubeconfig: string, reportHost?: string): Promise<void> {
  const [command = process.execPath, ...rest] = argv;
  await new Promise<void>((resolve, reject) => {
    let stderr = '';
    const child = spawn(command, rest, {
      cwd: repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        ...(reportHost ? { KHRUN_REPORT_HOST: reportHost } : {}),
        POWERTOOLS_LOG_LEVEL: 'ERROR',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${argv.join(' ')} exited ${code}:\n${stderr}`)),
    );
  });
}
