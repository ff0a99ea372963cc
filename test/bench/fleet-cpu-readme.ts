import type { NodeRow } from './fleet-node-row.ts';
import type { FleetRow } from './fleet-v3-figures.ts';
import type { RowCpu } from './row-cpu.ts';
import { fmtMs } from './stats.ts';

// The fleet section's table of where each row's CPU went (pure, from results.json alone).

interface CpuRow {
  checks: number;
  round?: number;
  who: string;
  cpu: RowCpu;
  /** Whether the row ran to its end (every check recorded, every pod ended); else its window was cut short. */
  complete: boolean;
}

const WHO = { khrun: 'khrun (tick and runners)', v3: 'Kuberhealthy v3.0.0 (controller)' } as const;
const NODE = 'the node alone';
const diff = (d: number) => `${coreS(Math.abs(d))} ${d < 0 ? 'less' : 'more'}`;
const coreS = (x: number) => `${x.toFixed(1)} core-s`;
const share = (x: number, of: number) => (of > 0 ? ` (${Math.round((100 * x) / of)}%)` : '');

/** The node's own work: what the control plane and the system did not use of the machine's busy CPU. */
export const restOf = (c: RowCpu) =>
  Math.max(0, c.busy - c.apiServer - c.etcd - c.schedulerAndControllers - (c.system ?? 0));

function line(r: CpuRow, rounds: boolean): string {
  const { cpu: c } = r;
  const saturation = c.cores > 0 && c.wallMs > 0 ? c.busy / ((c.cores * c.wallMs) / 1000) : 0;
  const cells = [
    `${r.checks}${rounds ? ` (round ${r.round ?? 1})` : ''}`,
    r.who,
    `${fmtMs(c.wallMs)}${r.complete ? '' : ' (cut short)'}`,
    `${coreS(c.busy)} (${Math.round(100 * saturation)}% of ${c.cores} cores)`,
    `${coreS(c.apiServer)}${share(c.apiServer, c.busy)}`,
    `${coreS(c.etcd)}${share(c.etcd, c.busy)}`,
    `${coreS(c.schedulerAndControllers)}${share(c.schedulerAndControllers, c.busy)}`,
    c.system === undefined ? '–' : `${coreS(c.system)}${share(c.system, c.busy)}`,
    `${coreS(restOf(c))}${share(restOf(c), c.busy)}`,
  ];
  return `| ${cells.join(' | ')} |`;
}

/**
 * For each size and round with all three rows run to their end: each system's CPU over the node alone's, and khrun's row's
 * busy CPU over v3's (on a machine busy all through every row, the time of a row follows its CPU). The node alone's over
 * v3's is the share of v3's CPU that running the same pods costs the node with no system at all: the floor from which
 * any system that runs these pods starts.
 */
function overNode(all: readonly CpuRow[]): string[] {
  const keys = [...new Set(all.map((r) => `${r.checks}/${r.round ?? 1}`))];
  return keys.flatMap((key) => {
    const of = (who: string) =>
      all.find((r) => `${r.checks}/${r.round ?? 1}` === key && r.who === who && r.complete)?.cpu;
    const k = of(WHO.khrun);
    const v = of(WHO.v3);
    const node = of(NODE);
    if (!k || !v || !node) return [];
    const [checks, round] = key.split('/');
    const rounds = new Set(all.filter((r) => String(r.checks) === checks).map((r) => r.round ?? 1)).size > 1;
    return [
      `- ${checks} checks${rounds ? ` (round ${round})` : ''}: khrun's row used ${diff(k.busy - node.busy)} than the node alone's, v3's ${diff(v.busy - node.busy)}; khrun's row's busy CPU ÷ v3's: ${(k.busy / v.busy).toFixed(2)}; the node alone's ÷ v3's: ${(node.busy / v.busy).toFixed(2)}.`,
    ];
  });
}

/** The table, rows in the order measured; [] when no row carries CPU figures (older results). */
export function cpuTable(rows: readonly FleetRow[], node: readonly NodeRow[]): string[] {
  const all: CpuRow[] = [
    ...rows.flatMap((r) =>
      r.cpu
        ? [
            {
              checks: r.checks,
              round: r.round,
              who: WHO[r.system],
              cpu: r.cpu,
              complete: r.allRecordedMs !== undefined,
            },
          ]
        : [],
    ),
    ...node.flatMap((x) =>
      x.cpu
        ? [{ checks: x.checks, round: x.round, who: NODE, cpu: x.cpu, complete: x.allEndedMs !== undefined }]
        : [],
    ),
  ].sort((a, b) => a.checks - b.checks || (a.round ?? 1) - (b.round ?? 1));
  if (!all.length) return [];
  const rounds = (n: number) => new Set(all.filter((r) => r.checks === n).map((r) => r.round ?? 1)).size > 1;
  return [
    '',
    "#### Where the machine's CPU went in each row",
    '',
    "The machine's busy CPU over each row (/proc/stat: user, nice, system, irq, softirq, steal; khrun's row until its last runner ended, v3's until all were recorded, the node alone's until every pod ended), the control plane's processes' own CPU over the same window (/proc/PID/stat), the system's own processes (khrun: the tick's and every runner's CPU at exit, all threads, printed by the benchmark's preload; v3: its controller's since its start) and the rest: the process kubelet, the checkers and their sandboxes, the benchmark's watchers. One core busy for one second is 1 core-s; a share is of the machine's busy CPU.",
    '',
    "| checks | row | window | machine busy | API server | etcd | scheduler + controller-manager | the system's own processes | the rest (kubelet, checkers, sandboxes) |",
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...all.map((r) => line(r, rounds(r.checks))),
    '',
    ...overNode(all),
  ];
}
