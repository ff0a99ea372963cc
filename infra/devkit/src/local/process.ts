import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process owned by the local cluster: its output goes to a log file, and stop() reaps it. */
export interface SupervisedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Settles when the process has exited, for whatever reason. */
  readonly exited: Promise<ExitInfo>;
  /** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone. */
  stop(graceMs?: number): Promise<ExitInfo>;
}

export async function startProcess(opts: {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}): Promise<SupervisedProcess> {
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  await once(log, 'open');
  const child = spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  let exitInfo: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      log.end();
      resolve(exitInfo);
    });
  });
  // A spawn failure (ENOENT, EACCES) surfaces as 'error' before any pid exists.
  await Promise.race([once(child, 'spawn'), exited]);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${opts.name}: could not start ${opts.command}`);
  return {
    name: opts.name,
    pid,
    logFile: opts.logFile,
    exited,
    async stop(graceMs = 10_000) {
      if (exitInfo) return exitInfo;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
