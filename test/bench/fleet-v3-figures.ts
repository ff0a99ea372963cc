import type { FleetSystem } from './fleet-v3-checks.ts';
import type { AuditRequest } from './kh-audit.ts';
import type { RowCpu } from './row-cpu.ts';
import type { ExitedProcess } from './scale.ts';
import { type Summary, summarize } from './stats.ts';

// A fleet row's figures from what it observed (pure).

/** A check's first outcome, as the watcher first saw it. */
export interface RecordedCheck {
  atMs: number;
  ok: boolean;
  error?: string;
}

export interface FleetRow {
  system: FleetSystem;
  checks: number;
  /** Which round of its size (each round runs every system once, in turn); absent in older results: 1. */
  round?: number;
  /** Time zero to the last check's first outcome; undefined when not all were recorded in the row's time. */
  allRecordedMs?: number;
  /** Time zero to the last outcome seen (all or not). */
  lastRecordedMs?: number;
  /** Time zero to each check's outcome. */
  recordedMs: Summary;
  recorded: number;
  ok: number;
  /** Checks with no outcome when the row ended. */
  lost: number;
  /** Outcomes other than success, by their first error cut to 80 characters (a timed-out run: late). */
  notOk: Record<string, number>;
  requests: {
    total: number;
    perCheck: number;
    byUser: Record<string, number>;
    byVerb: Record<string, number>;
    /** Answers by HTTP status (429: refused by the API server's priority and fairness, tried again). */
    byCode: Record<string, number>;
    /**
     * False when the audit log holds fewer checker pod creates than outcomes recorded (every outcome needs
     * its pod created in the window): the API server dropped audit events, so no request figure is made.
     */
    complete: boolean;
  };
  /** Checker pods the system's identity created (answered 201) in the row's namespaces, and deleted. */
  checkerPods: { created: number; deleted: number; perCheck: number };
  /** A checker pod's create (API server receipt) to its container's start (the process kubelet's report). */
  podCreateToStartMs: Summary;
  /** Checker pods created a second, first create to last. */
  podCreatesPerSecond?: number;
  peakRssMiB: { controller?: number; tick?: number; runners?: Summary };
  /** Where the machine's CPU went while the row ran (row-cpu.ts); absent in older results. */
  cpu?: RowCpu;
  tickMs?: number;
  runnerJobs?: number;
  /** Why the row ended: every check recorded, the row's time limit, or every runner Job ended first. */
  endedBy: 'all recorded' | 'deadline' | 'runners ended';
  loadAverage: { before: number[]; after: number[] };
}

const cut = (s: string | undefined) => (s ?? '(no error)').slice(0, 80);

export function rowFigures(input: {
  system: FleetSystem;
  n: number;
  t0: number;
  recordedAtMs: number;
  /** End of the request window (khrun: its last runner Job ended). */
  endMs: number;
  endedBy: FleetRow['endedBy'];
  recorded: ReadonlyMap<string, RecordedCheck>;
  namespaces: ReadonlySet<string>;
  requests: readonly AuditRequest[];
  users: readonly string[];
  /** The identity that creates checker pods. */
  podCreator: string;
  processes: readonly ExitedProcess[];
  memory: { controllerMiB?: number; tickMiB?: number; runnersMiB?: number[] };
  cpu?: RowCpu;
  tickMs?: number;
  runnerJobs?: number;
  loadAverage: FleetRow['loadAverage'];
}): FleetRow {
  const { t0 } = input;
  const times = [...input.recorded.values()].map((r) => r.atMs - t0);
  const notOk: Record<string, number> = {};
  let ok = 0;
  for (const r of input.recorded.values()) {
    if (r.ok) ok++;
    else notOk[cut(r.error)] = (notOk[cut(r.error)] ?? 0) + 1;
  }
  const inWindow = input.requests.filter(
    (r) => input.users.includes(r.user) && r.atMs >= t0 - 1_000 && r.atMs <= input.endMs,
  );
  const byUser: Record<string, number> = {};
  const byVerb: Record<string, number> = {};
  const byCode: Record<string, number> = {};
  for (const r of inWindow) {
    byUser[r.user] = (byUser[r.user] ?? 0) + 1;
    byVerb[`${r.verb} ${r.resource}`] = (byVerb[`${r.verb} ${r.resource}`] ?? 0) + 1;
    const code = String(r.code ?? 'watch');
    byCode[code] = (byCode[code] ?? 0) + 1;
  }
  const mine = (r: AuditRequest) =>
    r.user === input.podCreator && r.resource === 'pods' && input.namespaces.has(r.namespace ?? '');
  const creates = inWindow.filter((r) => mine(r) && r.verb === 'create' && r.code === 201);
  const deleted = inWindow.filter((r) => mine(r) && r.verb === 'delete' && (r.code ?? 0) < 300).length;
  const started = new Map(input.processes.map((p) => [p.pod, p.startedAtMs]));
  const toStart = creates.flatMap((c) => {
    const at = started.get(`${c.namespace}/${c.name}`);
    return at === undefined ? [] : [at - c.atMs];
  });
  const first = creates[0]?.atMs;
  const last = creates.at(-1)?.atMs;
  const all = input.recorded.size >= input.n;
  return {
    system: input.system,
    checks: input.n,
    ...(all ? { allRecordedMs: Math.max(...times) } : {}),
    ...(times.length ? { lastRecordedMs: Math.max(...times) } : {}),
    recordedMs: summarize(times),
    recorded: input.recorded.size,
    ok,
    lost: input.n - input.recorded.size,
    notOk,
    requests: {
      total: inWindow.length,
      perCheck: inWindow.length / input.n,
      byUser,
      byVerb,
      byCode,
      complete: creates.length >= input.recorded.size,
    },
    checkerPods: { created: creates.length, deleted, perCheck: creates.length / input.n },
    podCreateToStartMs: summarize(toStart),
    ...(first !== undefined && last !== undefined && last > first
      ? { podCreatesPerSecond: (creates.length - 1) / ((last - first) / 1000) }
      : {}),
    peakRssMiB: {
      ...(input.memory.controllerMiB ? { controller: input.memory.controllerMiB } : {}),
      ...(input.memory.tickMiB ? { tick: input.memory.tickMiB } : {}),
      ...(input.memory.runnersMiB?.length ? { runners: summarize(input.memory.runnersMiB) } : {}),
    },
    ...(input.cpu ? { cpu: input.cpu } : {}),
    ...(input.tickMs !== undefined ? { tickMs: input.tickMs } : {}),
    ...(input.runnerJobs !== undefined ? { runnerJobs: input.runnerJobs } : {}),
    endedBy: input.endedBy,
    loadAverage: input.loadAverage,
  };
}
