import { type ClusterOutcome, fanOut } from '../core/fan-out.ts';
import { logWithKeys } from '../core/log.ts';
import type { TickEntry } from '../schedule/tick-entry.ts';
import { runTick, type TickConfig, type TickDeps } from './tick.ts';

/** One cluster's tick: its entries, and its API server's time when they were decided. */
export interface ClusterTick {
  entries: TickEntry[];
  nowMs: number;
}

export interface FleetTickOptions {
  clusters: readonly string[];
  /**
   * One cluster's ports, made within its deadline (reading its runner template is a request too): a client
   * of its own whose requests abort with signal, and a dispatcher that sends to runners in that cluster.
   */
  open: (cluster: string, signal: AbortSignal) => Promise<TickDeps>;
  /** The most clusters ticked at once, and each one's deadline (core/fan-out.ts). */
  concurrency: number;
  deadlineMs: number;
  signal?: AbortSignal;
}

/**
 * One tick over several clusters: each cluster's own tick (runTick, unchanged), side by side, at most
 * `concurrency` at once and each within its own deadline, its log lines naming it. A cluster that cannot
 * be reached, refuses, or runs out of time is an outcome of its own; the others' ticks are not held back.
 * The same TickConfig (scope, identity, batches) holds in every cluster.
 */
export function runFleetTick(
  opts: FleetTickOptions,
  cfg: TickConfig,
): Promise<ClusterOutcome<ClusterTick>[]> {
  return fanOut(
    opts.clusters,
    async (cluster, signal) => {
      const deps = await opts.open(cluster, signal);
      const entries = await runTick({ ...deps, log: logWithKeys(deps.log, { cluster }) }, cfg);
      return { entries, nowMs: deps.clock.nowMs() };
    },
    { concurrency: opts.concurrency, deadlineMs: opts.deadlineMs, signal: opts.signal },
  );
}
