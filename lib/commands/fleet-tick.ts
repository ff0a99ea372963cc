import type { ClusterOutcome } from '../core/fan-out.ts';
import { escapeControls } from '../core/terminal-text.ts';
import type { TickEntry } from '../schedule/tick-entry.ts';
import { type ClusterTick, type FleetTickOptions, runFleetTick } from '../tick/fleet-tick.ts';
import type { TickConfig } from '../tick/tick.ts';
import { formatDocument } from './document.ts';
import { describeEntry } from './tick.ts';

/** One cluster in `khrun tick -o json|yaml` over a fleet: its entries, or why it has none. */
export type ClusterTickJson =
  | { ok: true; elapsedMs: number; entries: TickEntry[] }
  | { ok: false; elapsedMs: number; timedOut: boolean; error: string };

/** The fleet tick's document: clusters keyed by name (in the order given), so no two clusters' checks merge. */
export function fleetTickDocument(outcomes: readonly ClusterOutcome<ClusterTick>[]): {
  clusters: Record<string, ClusterTickJson>;
} {
  const clusters: Record<string, ClusterTickJson> = {};
  for (const o of outcomes) {
    const elapsedMs = Math.round(o.elapsedMs);
    clusters[o.cluster] = o.ok
      ? { ok: true, elapsedMs, entries: o.value.entries }
      : { ok: false, elapsedMs, timedOut: o.timedOut, error: o.reason };
  }
  return { clusters };
}

/**
 * The fleet tick as text: each cluster's lines (as `khrun tick` prints them) prefixed with `[cluster]`, its
 * summary line, a failed cluster's reason; then one line over the fleet. Cluster names and errors are
 * shown with their control characters escaped.
 */
export function fleetTickLines(outcomes: readonly ClusterOutcome<ClusterTick>[]): string[] {
  const lines: string[] = [];
  for (const o of outcomes) {
    const prefix = `[${escapeControls(o.cluster)}]`;
    const took = `${(o.elapsedMs / 1000).toFixed(1)}s`;
    if (!o.ok) {
      lines.push(`${prefix} tick FAILED after ${took}: ${escapeControls(o.reason)}`);
      continue;
    }
    for (const e of o.value.entries) lines.push(`${prefix} ${describeEntry(e, o.value.nowMs)}`);
    const sent = o.value.entries.filter((e) => e.result === 'dispatched').length;
    const failed = o.value.entries.filter((e) => e.result === 'failed').length;
    lines.push(
      `${prefix} tick: ${o.value.entries.length} checks, ${sent} dispatched${failed ? `, ${failed} FAILED` : ''} in ${took}`,
    );
  }
  const down = outcomes.filter((o) => !o.ok).map((o) => escapeControls(o.cluster));
  lines.push(
    `fleet: ${outcomes.length} clusters, ${down.length ? `${down.length} failed (${down.join(', ')})` : 'none failed'}`,
  );
  return lines;
}

/** 1 when a cluster failed or a dispatch in one failed (as `khrun tick`'s 1), else 0. */
export function fleetTickExit(outcomes: readonly ClusterOutcome<ClusterTick>[]): number {
  const bad = outcomes.some((o) => !o.ok || o.value.entries.some((e) => e.result === 'failed'));
  return bad ? 1 : 0;
}

/**
 * `khrun tick --context A,B` / `--all-contexts`: one tick per cluster side by side (lib/tick/fleet-tick.ts),
 * printed once every cluster has its outcome (at the latest at its deadline), in the order given.
 */
export async function fleetTickCommand(
  opts: FleetTickOptions & {
    config: TickConfig;
    output: 'text' | 'json' | 'yaml';
    write: (line: string) => void;
  },
): Promise<number> {
  const outcomes = await runFleetTick(opts, opts.config);
  if (opts.output !== 'text') opts.write(formatDocument(fleetTickDocument(outcomes), opts.output));
  else for (const line of fleetTickLines(outcomes)) opts.write(line);
  return fleetTickExit(outcomes);
}
