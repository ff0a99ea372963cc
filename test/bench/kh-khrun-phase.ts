import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CHECK_KINDS, type CheckKind, checkName } from './kh-checks.ts';
import type { CheckSet } from './kh-phase.ts';
import type { SeenRun } from './kh-run-watch.ts';

const PRELOAD = join(import.meta.dirname, 'maxrss-preload.mjs');

/** One `khrun run` process: when it was spawned and exited (this process's clock), its peak RSS. */
export interface Invocation {
  spawnMs: number;
  exitMs: number;
  peakRssMiB: number;
}

export interface KhrunPhase {
  runs: Record<CheckKind, SeenRun[]>;
  invocations: Record<CheckKind, Invocation[]>;
}

/**
 * khrun on the same checks: `khrun run --check` (khchecks) or `--healthcheck` (HealthChecks), the bench
 * build's bundle spawned as a process per run, `targets[kind]` runs of each kind one after another (the
 * kinds side by side, as a daemon runs them). Each kind runs as its own ServiceAccount, so every request of
 * a process (cluster-scoped ones too) is told apart by its username.
 */
export async function runKhrunPhase(opts: {
  checks: CheckSet;
  targets: Record<CheckKind, number>;
  users: Record<CheckKind, { kubeconfig: string }>;
  dist: string;
  reportHost: string;
  log: (line: string) => void;
}): Promise<KhrunPhase> {
  const flag = opts.checks.record === 'khstate' ? '--check' : '--healthcheck';
  const invocations = {} as Record<CheckKind, Invocation[]>;
  await Promise.all(
    CHECK_KINDS.map(async (kind) => {
      invocations[kind] = [];
      for (let i = 0; i < opts.targets[kind]; i++) {
        const args = [
          'run',
          flag,
          checkName(kind),
          '--namespace',
          opts.checks.namespaces[kind],
          '--output',
          'json',
        ];
        invocations[kind].push(
          await spawnKhrun(opts.dist, args, opts.users[kind].kubeconfig, opts.reportHost),
        );
      }
    }),
  );
  await opts.checks.watch.until(
    () => CHECK_KINDS.every((k) => opts.checks.done(k) >= opts.targets[k]),
    30_000,
    'the outcome of every khrun run in the watched objects',
  );
  const runs = {} as Record<CheckKind, SeenRun[]>;
  for (const kind of CHECK_KINDS) runs[kind] = opts.checks.watch.runs(opts.checks.namespaces[kind]);
  return { runs, invocations };
}

/** Spawns one `khrun run` to its exit; a runner or usage error (exit 1, 2) fails the benchmark. */
function spawnKhrun(
  dist: string,
  args: string[],
  kubeconfig: string,
  reportHost: string,
): Promise<Invocation> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    let stdout = '';
    const spawnMs = Date.now();
    const child = spawn(process.execPath, ['--import', PRELOAD, join(dist, 'khrun.mjs'), ...args], {
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        KHRUN_REPORT_HOST: reportHost,
        POWERTOOLS_LOG_LEVEL: 'ERROR',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (c: Buffer) => {
      stdout = (stdout + c.toString()).slice(-4000);
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-8000);
    });
    child.once('error', reject);
    // 'close', not 'exit': only then has all of the child's output been read (the peak RSS line is last).
    child.once('close', (code) => {
      const exitMs = Date.now();
      const kb = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(stderr)?.[1]);
      if (code === 1 || code === 2 || !Number.isFinite(kb))
        reject(new Error(`khrun ${args.join(' ')} exited ${code}:\n${stdout}\n${stderr}`));
      else resolve({ spawnMs, exitMs, peakRssMiB: kb / 1024 });
    });
  });
}
