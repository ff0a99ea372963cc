import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';
import { repoRoot } from '../../helpers/khrun.ts';

/** Which cluster a runner talks to: the suite's shared one unless a test started its own. */
export interface Target {
  kubeconfigPath: string;
  /** Where checker pods reach a runner on this machine (the cluster's pod-network host address). */
  hostIp: string;
}

export const sharedTarget = (): Target => ({
  kubeconfigPath: inject('kubeconfigPath'),
  hostIp: inject('hostIp'),
});

export interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Runner {
  child: ChildProcess;
  pid: number;
  done: Promise<RunnerExit>;
  /** Everything written so far (stdout then stderr). */
  output(): string;
}

/**
 * Starts the real entrypoint, `khrun run --check NAME --namespace NS --output json`, as a CronJob would,
 * with the given extra environment (KHRUN_LEASE_SECONDS, KHRUN_FAILPOINT_KILL_AT, POD_NAME, ...).
 */
export function startRunner(
  check: string,
  namespace: string,
  env: Record<string, string> = {},
  target: Target = sharedTarget(),
): Runner {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'functions/khrun.mjs'),
      'run',
      '--check',
      check,
      '--namespace',
      namespace,
      '--output',
      'json',
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: target.kubeconfigPath,
        KHRUN_REPORT_HOST: target.hostIp,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<RunnerExit>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, pid: child.pid ?? -1, done, output: () => `${stdout}${stderr}` };
}

/** The JSON result line `khrun run --output json` prints last; undefined when it printed none (killed). */
export function resultOf(exit: RunnerExit): Record<string, unknown> | undefined {
  const line = exit.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"result"') && !l.includes('"level"'))
    .pop();
  return line ? (JSON.parse(line) as Record<string, unknown>) : undefined;
}

/** The runner's structured log lines (Powertools JSON: they carry a level). */
export function logLines(text: string): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (typeof parsed.level === 'string') lines.push(parsed);
    } catch {
      // not a log line
    }
  }
  return lines;
}

/** Resident set size of a live process in bytes (from /proc), or undefined once it has exited. */
export async function rssBytes(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : undefined;
}

/** Stops a runner this test started, if it is still running (afterAll / finally). */
export async function stopRunner(runner: Runner | undefined): Promise<void> {
  if (!runner || runner.child.exitCode !== null || runner.child.signalCode !== null) return;
  runner.child.kill('SIGKILL');
  await runner.done.catch(() => undefined);
}
