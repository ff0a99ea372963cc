import { type AuditRequest, writeTimeOf } from './kh-audit.ts';
import { CHECK_KINDS, type CheckKind } from './kh-checks.ts';
import type { DaemonPhase } from './kh-daemon-phase.ts';
import type { KhrunPhase } from './kh-khrun-phase.ts';
import type { RunRecord, SeenRun } from './kh-run-watch.ts';
import { type Summary, summarize } from './stats.ts';

/** One check kind as one actor ran it. */
export interface KindFigure {
  runs: number;
  ok: number;
  /** Run start (its UUID written) to outcome (its result written), both the API server's receipt times. */
  toOutcomeMs: Summary;
  /** Runs left out of toOutcomeMs: a write the watcher saw had no audit entry within 3 s before. */
  unpaired: number;
  requestsPerRun: Summary;
  /** Between the start and the outcome writes (the long check only), per minute of the run. */
  requestsPerMinuteDuringRun?: Summary;
}

export interface ActorFigure {
  checks: Record<CheckKind, KindFigure>;
  requestsByVerb: Record<string, number>;
}

const minutes = (ms: number) => ms / 60_000;

/** Times and requests of each kind's measured runs, given each run's request window (pure). */
function kindFigures(input: {
  record: RunRecord;
  requests: readonly AuditRequest[];
  runs: Record<CheckKind, SeenRun[]>;
  /** The user whose writes mark a kind's starts and outcomes, and whose requests a window counts. */
  userOf: (kind: CheckKind) => string;
  namespaces: Record<CheckKind, string>;
  /** Each measured run's request window, per kind (the same length as the runs counted). */
  windows: (kind: CheckKind, apiStarts: Array<number | undefined>) => Array<{ fromMs: number; toMs: number }>;
  /** Whether a request in a window is the run's (a daemon's: in the check's namespace). */
  counts: (kind: CheckKind, r: AuditRequest) => boolean;
}): ActorFigure {
  const resource = input.record === 'khstate' ? 'khstates' : 'healthchecks/status';
  const checks = {} as Record<CheckKind, KindFigure>;
  const byVerb: Record<string, number> = {};
  for (const kind of CHECK_KINDS) {
    const match = { user: input.userOf(kind), namespace: input.namespaces[kind], resource };
    const runs = input.runs[kind];
    const apiStarts = runs.map((r) => writeTimeOf(input.requests, match, r.startSeenMs));
    const windows = input.windows(kind, apiStarts);
    const measured = runs.slice(0, windows.length);
    const times: number[] = [];
    const during: number[] = [];
    let unpaired = 0;
    for (const [i, run] of measured.entries()) {
      const start = apiStarts[i];
      const end =
        run.outcomeSeenMs === undefined ? undefined : writeTimeOf(input.requests, match, run.outcomeSeenMs);
      if (start === undefined || end === undefined) {
        unpaired++;
        continue;
      }
      times.push(end - start);
      if (kind === 'long') {
        const n = input.requests.filter(
          (r) => r.user === match.user && r.atMs > start && r.atMs < end && input.counts(kind, r),
        ).length;
        during.push(n / minutes(end - start));
      }
    }
    const perRun = windows.map(({ fromMs, toMs }) => {
      const inWindow = input.requests.filter(
        (r) => r.user === match.user && r.atMs >= fromMs && r.atMs < toMs && input.counts(kind, r),
      );
      for (const r of inWindow)
        byVerb[`${r.verb} ${r.resource}`] = (byVerb[`${r.verb} ${r.resource}`] ?? 0) + 1;
      return inWindow.length;
    });
    checks[kind] = {
      runs: measured.length,
      ok: measured.filter((r) => r.ok).length,
      toOutcomeMs: summarize(times),
      unpaired,
      requestsPerRun: summarize(perRun),
      ...(kind === 'long' ? { requestsPerMinuteDuringRun: summarize(during) } : {}),
    };
  }
  return { checks, requestsByVerb: byVerb };
}

/** A daemon's figures: a run's requests are those in its check's namespace from 2 s before its start to 2 s before the next. */
export function daemonFigures(input: {
  record: RunRecord;
  phase: DaemonPhase;
  namespaces: Record<CheckKind, string>;
  targets: Record<CheckKind, number>;
  requests: readonly AuditRequest[];
}) {
  const { phase, namespaces } = input;
  const own = input.requests.filter((r) => r.user === phase.user);
  const lead = 2_000;
  const checkNamespaces = new Set(Object.values(namespaces));
  const per = kindFigures({
    record: input.record,
    requests: own,
    runs: phase.runs,
    userOf: () => phase.user,
    namespaces,
    windows: (kind, starts) =>
      starts.slice(0, input.targets[kind]).flatMap((s, i) => {
        const next = starts[i + 1];
        return s === undefined || next === undefined ? [] : [{ fromMs: s - lead, toMs: next - lead }];
      }),
    counts: (kind, r) => r.namespace === namespaces[kind],
  });
  const background = own.filter(
    (r) => r.atMs >= phase.runsFromMs && r.atMs < phase.runsToMs && !checkNamespaces.has(r.namespace ?? ''),
  ).length;
  // The rest window in 30 s slices, each as a rate per minute: n slices and their spread.
  const slices: number[] = [];
  for (let from = phase.restFromMs; from + 30_000 <= phase.restToMs; from += 30_000)
    slices.push(own.filter((r) => r.atMs >= from && r.atMs < from + 30_000).length * 2);
  const restWrites = own.filter(
    (r) =>
      r.atMs >= phase.restFromMs &&
      r.atMs < phase.restToMs &&
      checkNamespaces.has(r.namespace ?? '') &&
      ['create', 'update', 'patch'].includes(r.verb),
  ).length;
  return {
    user: phase.user,
    ...per,
    backgroundPerMinuteWhileRunning: background / minutes(phase.runsToMs - phase.runsFromMs),
    restPerMinute: summarize(slices),
    restWritesToChecks: restWrites,
    rssMiB: summarize(phase.memory.samplesMiB),
    peakRssMiB: phase.memory.peakMiB,
  };
}

/** khrun's figures: a run's requests are every request of its process (its own ServiceAccount). */
export function khrunFigures(input: {
  record: RunRecord;
  phase: KhrunPhase;
  namespaces: Record<CheckKind, string>;
  users: Record<CheckKind, string>;
  requests: readonly AuditRequest[];
}) {
  const per = kindFigures({
    record: input.record,
    requests: input.requests,
    runs: input.phase.runs,
    userOf: (kind) => input.users[kind],
    namespaces: input.namespaces,
    windows: (kind) =>
      input.phase.invocations[kind].map((i) => ({ fromMs: i.spawnMs, toMs: i.exitMs + 200 })),
    counts: () => true,
  });
  const peaks = CHECK_KINDS.flatMap((k) => input.phase.invocations[k].map((i) => i.peakRssMiB));
  return { users: input.users, ...per, runnerPeakRssMiB: summarize(peaks) };
}
