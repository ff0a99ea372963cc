import { readdir, readFile } from 'node:fs/promises';

/**
 * The pid of the running program `binary` (the process kubelet runs a pod's container as a local process,
 * its argv[0] the mapped build). Several: the newest (the highest start time). Undefined when none runs.
 */
export async function pidOf(binary: string): Promise<number | undefined> {
  let best: { pid: number; start: number } | undefined;
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0')[0] !== binary) continue;
    // /proc/PID/stat field 22 is the start time; the command (field 2) may hold spaces, so count after ')'.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    if (!best || start > best.start) best = { pid, start };
  }
  return best?.pid;
}

/** VmRSS (now) and VmHWM (peak since start) of a process, in MiB; undefined once it is gone. */
export async function rssOf(pid: number): Promise<{ rssMiB: number; peakMiB: number } | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  if (!status) return undefined;
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}

/** Samples a process's RSS every intervalMs until stopped: the samples and its peak (VmHWM) when stopped. */
export function sampleRss(pid: number, intervalMs: number) {
  const samples: number[] = [];
  let peakMiB = 0;
  const take = async () => {
    const now = await rssOf(pid);
    if (!now) return;
    samples.push(now.rssMiB);
    peakMiB = Math.max(peakMiB, now.peakMiB);
  };
  void take();
  const timer = setInterval(() => void take(), intervalMs);
  return {
    async stop(): Promise<{ samplesMiB: number[]; peakMiB: number }> {
      clearInterval(timer);
      await take();
      return { samplesMiB: samples, peakMiB };
    },
  };
}

/** When a process started (epoch ms, 10 ms steps): /proc/PID/stat's start time after boot (/proc/stat btime). */
export async function processStartMs(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  const boot = Number(/^btime (\d+)$/m.exec(await readFile('/proc/stat', 'utf8'))?.[1]);
  if (!stat || !Number.isFinite(boot)) return undefined;
  // Field 22, in clock ticks (USER_HZ, 100 on Linux); the command (field 2) may hold spaces.
  const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  return Number.isFinite(ticks) ? boot * 1000 + ticks * 10 : undefined;
}

/** A process's CPU time so far (user + system, its own; 10 ms steps), in ms; undefined once it is gone. */
export async function cpuMsOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return undefined;
  // Fields 14 and 15 (utime, stime), in clock ticks (USER_HZ, 100 on Linux); the command may hold spaces.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}
