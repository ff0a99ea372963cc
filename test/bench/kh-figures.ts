import { type AuditRequest, requestBefore } from './kh-audit.ts';
import { CHECK_KINDS, type CheckKind } from './kh-checks.ts';
import type { RunRecord, SeenRun } from './kh-run-watch.ts';
import { khrunDueTimes, v2DueTimes, v3DueTimes } from './kh-schedule.ts';
import { type Summary, summarize } from './stats.ts';

// The kuberhealthy section's figures from what one pair measured (pure): every actor's runs as the same
// watcher saw them, its due times by its own schedule (kh-schedule.ts), its requests from the audit log.

/** One check as one actor ran it; the first run of each (start-up) is left out. */
export interface KindFigure {
  /** Runs with an outcome. */
  runs: number;
  ok: number;
  /** Start (the first version of the object carrying the run's UUID) to outcome (the first carrying its result). */
  startToOutcomeMs: Summary;
  /** Due by the actor's schedule (and its last run over) to outcome. */
  dueToOutcomeMs: Summary;
  /** Runs with an outcome but no due time (a request the audit log did not hold). */
  dueUnknown: number;
}

export interface ActorFigure {
  /** Its ServiceAccount's username: whose requests were counted. */
  user: string;
  record: RunRecord;
  checks: Record<CheckKind, KindFigure>;
  /** Every request of the identity from the window's start to its end, and the outcomes in the window. */
  requests: { total: number; finishedRuns: number; perFinishedRun: number; byVerb: Record<string, number> };
}

export type Schedule =
  | { kind: 'v2' }
  | { kind: 'v3' }
  | { kind: 'khrun'; fires: Record<CheckKind, readonly number[]> };

const ns = (kind: CheckKind, namespaces: Record<CheckKind, string>) => namespaces[kind];

/** Each run's due time, by the actor's schedule. */
function dueTimes(input: {
  schedule: Schedule;
  kind: CheckKind;
  runs: readonly SeenRun[];
  intervalMs: number;
  requests: readonly AuditRequest[];
  user: string;
  namespace: string;
}): Array<number | undefined> {
  const { runs, intervalMs } = input;
  const outcomes = runs.map((r) => r.outcomeSeenMs);
  if (input.schedule.kind === 'khrun')
    return khrunDueTimes(
      input.schedule.fires[input.kind],
      runs.map((r) => r.startSeenMs),
    );
  if (input.schedule.kind === 'v3')
    return v3DueTimes(
      runs.map((r) => r.lastRunUnix),
      outcomes,
      intervalMs,
    );
  // v2 starts a run by reading the khstate and writing the new UUID into it (setNewCheckUUID): that read is
  // the run's release. The first run's is its first read (it creates the khstate, then reads it again).
  const match = { user: input.user, namespace: input.namespace, resource: 'khstates', verbs: ['get'] };
  const releases = runs.map((r, k) =>
    requestBefore(input.requests, match, r.startSeenMs, k === 0 ? 'first' : 'last'),
  );
  return v2DueTimes(releases, outcomes, intervalMs);
}

/** One actor's figures in one pair. */
export function actorFigure(input: {
  record: RunRecord;
  user: string;
  schedule: Schedule;
  runs: Record<CheckKind, readonly SeenRun[]>;
  namespaces: Record<CheckKind, string>;
  intervalMs: number;
  /** The audit log's requests, sorted by time (any users: the actor's are picked by username). */
  requests: readonly AuditRequest[];
  windowFromMs: number;
  windowToMs: number;
}): ActorFigure {
  const own = input.requests.filter((r) => r.user === input.user);
  const checks = {} as Record<CheckKind, KindFigure>;
  let finishedRuns = 0;
  for (const kind of CHECK_KINDS) {
    const runs = input.runs[kind];
    const due = dueTimes({
      schedule: input.schedule,
      kind,
      runs,
      intervalMs: input.intervalMs,
      requests: own,
      user: input.user,
      namespace: ns(kind, input.namespaces),
    });
    const starts: number[] = [];
    const fromDue: number[] = [];
    let ok = 0;
    let dueUnknown = 0;
    for (const [i, run] of runs.entries()) {
      const end = run.outcomeSeenMs;
      if (end === undefined) continue;
      if (end >= input.windowFromMs && end <= input.windowToMs) finishedRuns++;
      if (i === 0) continue;
      starts.push(end - run.startSeenMs);
      if (run.ok) ok++;
      const d = due[i];
      if (d === undefined) dueUnknown++;
      else fromDue.push(end - d);
    }
    checks[kind] = {
      runs: starts.length,
      ok,
      startToOutcomeMs: summarize(starts),
      dueToOutcomeMs: summarize(fromDue),
      dueUnknown,
    };
  }
  const inWindow = own.filter((r) => r.atMs >= input.windowFromMs && r.atMs <= input.windowToMs);
  const byVerb: Record<string, number> = {};
  for (const r of inWindow) byVerb[`${r.verb} ${r.resource}`] = (byVerb[`${r.verb} ${r.resource}`] ?? 0) + 1;
  return {
    user: input.user,
    record: input.record,
    checks,
    requests: {
      total: inWindow.length,
      finishedRuns,
      perFinishedRun: finishedRuns ? inWindow.length / finishedRuns : Number.NaN,
      byVerb,
    },
  };
}
