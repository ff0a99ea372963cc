import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';

/** A `khrun serve` process started for a measurement, and what it printed. */
export interface ServeProcess {
  child: ChildProcess;
  pid: number;
  /** Its base URL (the report endpoint is base + /externalCheckStatus). */
  base: string;
  output(): string;
  stop(): Promise<void>;
}

/** Spawns `node ENTRY serve ...` and resolves once it prints where it serves; rejects if it exits first. */
export async function startServeProcess(
  entry: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [entry, 'serve', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (c: Buffer) => {
    // The log grows with every request; the tail is what a failure message needs.
    out = (out + c.toString()).slice(-200_000);
  };
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      keep(c);
      const m = /reports at (http:\/\/\S+)\/externalCheckStatus/.exec(out);
      if (m) resolve(m[1] ?? '');
    });
    void exited.then((code) => reject(new Error(`khrun serve exited (${code}) before listening:\n${out}`)));
  });
  return {
    child,
    pid: child.pid ?? -1,
    base,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident set size and its peak (VmRSS, VmHWM) of a live process, in MiB, from /proc. */
export async function memoryOf(pid: number): Promise<{ rssMiB: number; peakMiB: number } | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1]);
  const rss = kb('VmRSS');
  if (!Number.isFinite(rss)) return undefined;
  return { rssMiB: rss / 1024, peakMiB: kb('VmHWM') / 1024 };
}

/** Samples a process's memory every intervalMs until stopped; each sample carries the caller's counters. */
export function startSampler<C extends Record<string, number | string>>(
  pid: number,
  intervalMs: number,
  counters: () => C,
) {
  const startedMs = Date.now();
  const samples: Array<{ atS: number; rssMiB: number } & C> = [];
  const take = async () => {
    const m = await memoryOf(pid);
    if (m)
      samples.push({
        atS: Math.round((Date.now() - startedMs) / 100) / 10,
        rssMiB: round(m.rssMiB),
        ...counters(),
      });
  };
  const timer = setInterval(() => void take(), intervalMs);
  return {
    samples,
    take,
    stop() {
      clearInterval(timer);
    },
  };
}

export const round = (n: number) => Math.round(n * 10) / 10;
