import { readFile } from 'node:fs/promises';
import type { BenchCluster } from './bench-cluster.ts';
import { cpuMsOf } from './proc-rss.ts';

// Where a fleet row's CPU went (issue 27 item 2: "find where the time goes"; "where the local cluster is the
// limit, say so with the evidence"): the machine's busy CPU over the row, and the control plane's processes'
// own share of it, read from /proc at the row's start and end. The system's own processes are added by the
// row (their CPU at exit, or the controller's /proc), and the rest is everything else on the node: the
// process kubelet, the checkers, their sandboxes.

/** CPU over one row, in core-seconds (one core busy for one second is 1). */
export interface RowCpu {
  /** The window the figures cover: the row's time zero to its end. */
  wallMs: number;
  /** Cores on the machine: busy ÷ (cores × wall) is how saturated it was. */
  cores: number;
  /** Every process on the machine (/proc/stat: user, nice, system, irq, softirq, steal). */
  busy: number;
  apiServer: number;
  etcd: number;
  /** kube-scheduler and kube-controller-manager. */
  schedulerAndControllers: number;
  /** The system's own processes (khrun: its tick and runners, at their exit; v3: its controller); the node alone: none. */
  system?: number;
}

const USER_HZ = 100;

/** The machine's busy CPU since boot, in ms, and its number of cores (/proc/stat's cpu lines). */
export async function machineBusyMs(): Promise<{ ms: number; cores: number }> {
  return busyOfProcStat(await readFile('/proc/stat', 'utf8'));
}

/** /proc/stat's text: busy ms since boot (every field but idle and iowait) and the per-core lines' count. */
export function busyOfProcStat(text: string): { ms: number; cores: number } {
  const lines = text.split('\n');
  // cpu  user nice system idle iowait irq softirq steal ...
  const f = (lines[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const ticks = [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (f[i] ?? 0), 0);
  const cores = lines.filter((l) => /^cpu\d+ /.test(l)).length;
  return { ms: (ticks * 1000) / USER_HZ, cores };
}

type Part = 'apiServer' | 'etcd' | 'schedulerAndControllers';

const partOf = (argv0: string): Part | undefined =>
  argv0.endsWith('kube-apiserver')
    ? 'apiServer'
    : argv0.endsWith('etcd')
      ? 'etcd'
      : argv0.endsWith('kube-scheduler') || argv0.endsWith('kube-controller-manager')
        ? 'schedulerAndControllers'
        : undefined;

async function controlPlaneMs(pids: readonly number[]): Promise<Record<Part, number>> {
  const out: Record<Part, number> = { apiServer: 0, etcd: 0, schedulerAndControllers: 0 };
  for (const pid of pids) {
    const argv0 = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')[0] ?? '';
    const part = partOf(argv0);
    const ms = part ? await cpuMsOf(pid) : undefined;
    if (part && ms !== undefined) out[part] += ms;
  }
  return out;
}

/**
 * Starts measuring now; stop() gives the row's CPU since. The control plane must not restart in between
 * (a restarted process's CPU starts again from 0): the fleet rows never restart it.
 */
export async function rowCpuMeter(bench: BenchCluster) {
  const pids = bench.cluster.controlPlane.pids();
  const t0 = Date.now();
  const busy0 = await machineBusyMs();
  const parts0 = await controlPlaneMs(pids);
  return {
    async stop(systemMs?: number): Promise<RowCpu> {
      const busy1 = await machineBusyMs();
      const parts1 = await controlPlaneMs(pids);
      const s = (ms: number) => Math.round(ms / 10) / 100;
      return {
        wallMs: Date.now() - t0,
        cores: busy1.cores,
        busy: s(busy1.ms - busy0.ms),
        apiServer: s(parts1.apiServer - parts0.apiServer),
        etcd: s(parts1.etcd - parts0.etcd),
        schedulerAndControllers: s(parts1.schedulerAndControllers - parts0.schedulerAndControllers),
        ...(systemMs !== undefined ? { system: s(systemMs) } : {}),
      };
    },
  };
}

/** The CPU a preloaded process printed at exit (maxrss-preload.mjs's KHRUN_BENCH_CPU_MS line), in ms. */
export const exitCpuMs = (log: string): number | undefined => {
  const ms = Number(/KHRUN_BENCH_CPU_MS (\d+)/.exec(log)?.[1]);
  return Number.isFinite(ms) ? ms : undefined;
};
