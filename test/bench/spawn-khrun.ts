import { spawn } from 'node:child_process';
import { repoRoot } from './bench-cluster.ts';

/**
 * Spawns a process to exit with extra environment; resolves with its exit code, its stdout and the tail of
 * its stderr, and the wall-clock time from spawn to exit.
 */
export function spawnToExit(
  argv: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const [command = process.execPath, ...rest] = argv;
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, rest, {
      cwd: repoRoot,
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-20_000);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - t0 }));
  });
}
