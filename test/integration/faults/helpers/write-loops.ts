import { KHSTATE_PLURAL } from '../../../../lib/state/resources.ts';
import type { AuditEvent } from './audit.ts';
import { logLines } from './khrun-process.ts';

// Which compare-and-swap loop made each khstate write, from two independent records: the API server's
// audit log (every write, its answer, and the loop's name in the user agent `khrun/<writer>`) and the
// runner's DEBUG log (every conflict, with the loop's name and its attempt number). The audit log says
// what happened; the attempt numbers say where one loop ends and the next begins, which the audit log
// cannot (a report endpoint that gave up answers 500, and the checker's retry starts a new loop of the
// same writer right after).

const RUNNER_AGENT = /^khrun\/([a-z][a-z-]*)$/;
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
/** An overloaded or unavailable API server's answers (isTransientApiError): they end a loop, not a bug. */
const TRANSIENT = new Set([429, 500, 502, 503, 504]);
/** The line updateWithRetry logs at DEBUG for each conflict: writer, attempt (from 1), target. */
export const CONFLICT_MESSAGE = 'write conflicted; reading again';

/** One `khrun run` process as the test saw it from outside. */
export interface Invocation {
  /** For messages, e.g. `hammer-a stressed`. */
  label: string;
  check: string;
  /** Taken just before the spawn and just after the exit: every request of the process falls between. */
  startedMs: number;
  endedMs: number;
  /** All it printed (stdout then stderr), its DEBUG logs included. */
  output: string;
}

/** One loop: so many conflicts in a row, then a write that landed, or none (it gave up, or had nothing left to write). */
export interface Loop {
  conflicts: number;
  written: boolean;
}

/** One writer's loops in one invocation, in order, and its writes as the API server counted them. */
export interface WriterLoops {
  writes: number;
  conflicts: number;
  loops: Loop[];
}

export interface WriteAccount {
  /** Invocation label → writer → its loops. */
  byInvocation: Map<string, Map<string, WriterLoops>>;
  /** The test's own writers' writes (by their user agent), per khstate name. */
  testWrites: Map<string, number>;
  /** Empty when every write is attributed and every loop kept its bound. */
  problems: string[];
}

const atMs = (timestamp: string) => Date.parse(timestamp);
const byArrival = (a: AuditEvent, b: AuditEvent) =>
  a.requestReceivedTimestamp.localeCompare(b.requestReceivedTimestamp) ||
  a.stageTimestamp.localeCompare(b.stageTimestamp);
const describe = (e: AuditEvent) =>
  `${e.verb} ${e.objectRef?.name} by ${e.user?.username} with user agent ${JSON.stringify(e.userAgent)} at ${e.requestReceivedTimestamp}, answered ${e.responseStatus?.code}`;

/**
 * Attributes every write to the invocations' checks' khstates in the events to an invocation (by time: each invocation's requests
 * arrive between its start and its exit, and the invocations of one check run one after another) and to a
 * loop (by user agent), or to the test's own writers (testAgents). Then, per invocation and writer, pairs
 * the API server's 409s one to one, in order, with the conflicts the runner logged, and splits the
 * answers into loops where the logged attempt number starts again at 1.
 *
 * Problems: a write nobody can be held to (another user agent, or a runner's outside every invocation
 * of its check); 409 counts that differ between the audit log and the logs (a conflict the logs hide, or
 * a loop whose writes do not say its name); attempt numbers out of step with the answers; a loop with more
 * than maxAttempts conflicts; a loop that hit maxAttempts conflicts while nothing in the output says it
 * gave up (which would make the write after it a further attempt, not a new loop).
 */
export function accountKhStateWrites(
  events: AuditEvent[],
  invocations: Invocation[],
  opts: { namespace: string; maxAttempts: number; testAgents: string[] },
): WriteAccount {
  const problems: string[] = [];
  const testWrites = new Map<string, number>();
  const audited = new Map<Invocation, Map<string, AuditEvent[]>>();
  const unattributed: string[] = [];
  const checks = new Set(invocations.map((i) => i.check));
  const writes = events
    .filter(
      (e) =>
        e.objectRef?.resource === KHSTATE_PLURAL &&
        checks.has(e.objectRef.name ?? '') &&
        WRITE_VERBS.has(e.verb),
    )
    .sort(byArrival);
  for (const e of writes) {
    const name = e.objectRef?.name ?? '';
    if (e.userAgent !== undefined && opts.testAgents.includes(e.userAgent)) {
      testWrites.set(name, (testWrites.get(name) ?? 0) + 1);
      continue;
    }
    const writer = RUNNER_AGENT.exec(e.userAgent ?? '')?.[1];
    const arrivedMs = atMs(e.requestReceivedTimestamp);
    const inv = invocations.find(
      (i) => i.check === name && i.startedMs <= arrivedMs && arrivedMs <= i.endedMs,
    );
    if (!writer || !inv) {
      unattributed.push(describe(e));
      continue;
    }
    const ofInv = audited.get(inv) ?? new Map<string, AuditEvent[]>();
    audited.set(inv, ofInv.set(writer, [...(ofInv.get(writer) ?? []), e]));
  }
  if (unattributed.length > 0)
    problems.push(
      `${unattributed.length} khstate write(s) attributed to no loop of the runner (user agent not khrun/<writer>, or outside every invocation):\n  ${unattributed.slice(0, 10).join('\n  ')}`,
    );

  const byInvocation = new Map<string, Map<string, WriterLoops>>();
  for (const inv of invocations) {
    const target = `${opts.namespace}/${inv.check}`;
    const logged = new Map<string, number[]>();
    for (const line of logLines(inv.output).filter((l) => l.message === CONFLICT_MESSAGE)) {
      const writer = String(line.writer);
      if (line.target !== target)
        problems.push(`${inv.label}: ${writer} logged a conflict on ${String(line.target)}, not ${target}`);
      logged.set(writer, [...(logged.get(writer) ?? []), Number(line.attempt)]);
    }
    const answered = audited.get(inv) ?? new Map<string, AuditEvent[]>();
    const tallies = new Map<string, WriterLoops>();
    for (const writer of new Set([...answered.keys(), ...logged.keys()])) {
      const stream = answered.get(writer) ?? [];
      const attempts = logged.get(writer) ?? [];
      const conflicts = stream.filter((e) => e.responseStatus?.code === 409).length;
      const where = `${inv.label}, ${writer}`;
      if (conflicts !== attempts.length) {
        problems.push(
          `${where}: the API server answered ${conflicts} conflict(s) to khrun/${writer}, the runner logged ${attempts.length}`,
        );
        continue;
      }
      const loops = splitLoops(stream, attempts, opts.maxAttempts, (p) => problems.push(`${where}: ${p}`));
      for (const loop of loops.filter((l) => l.conflicts > opts.maxAttempts))
        problems.push(`${where}: a loop retried past its bound: ${loop.conflicts} conflicts in a row`);
      const exhausted = loops.filter((l) => l.conflicts === opts.maxAttempts && !l.written).length;
      const gaveUp = giveUpLines(inv.output, writer, target, opts.maxAttempts);
      if (exhausted > gaveUp)
        problems.push(
          `${where}: ${exhausted} loop(s) hit ${opts.maxAttempts} conflicts, but only ${gaveUp} line(s) of its output say it gave up`,
        );
      tallies.set(writer, { writes: stream.length, conflicts, loops });
    }
    byInvocation.set(inv.label, tallies);
  }
  return { byInvocation, testWrites, problems };
}

/**
 * One writer's answers in arrival order, cut into loops: a logged attempt 1 starts a loop, attempt n
 * continues the loop that had n - 1 conflicts, a write that landed ends the loop (or is a loop of its own
 * when the one before had given up), a transient failure ends it unwritten. Anything else is reported
 * through problem.
 */
function splitLoops(
  stream: AuditEvent[],
  attempts: number[],
  maxAttempts: number,
  problem: (text: string) => void,
): Loop[] {
  const loops: Loop[] = [];
  let open: Loop | undefined;
  const close = () => {
    if (open) loops.push(open);
    open = undefined;
  };
  let next = 0;
  for (const e of stream) {
    const code = e.responseStatus?.code ?? 0;
    if (code === 409) {
      const attempt = attempts[next++] ?? Number.NaN;
      if (attempt !== 1 && open?.conflicts !== attempt - 1)
        problem(
          `the conflict at ${e.requestReceivedTimestamp} was logged as attempt ${attempt}, after ${open ? `${open.conflicts} conflict(s)` : 'no conflict'} of this writer in a row`,
        );
      if (attempt === 1 || open === undefined) {
        close();
        open = { conflicts: 0, written: false };
      }
      open.conflicts = attempt;
    } else if (code >= 200 && code < 300) {
      if (open && open.conflicts < maxAttempts) open.written = true;
      else {
        close();
        open = { conflicts: 0, written: true };
      }
      close();
    } else if (TRANSIENT.has(code)) {
      // The loop throws it at once; the caller's own retry (the report endpoint, the lease keeper)
      // starts a new loop, whose attempts count from 1 again.
      close();
    } else {
      problem(`neither written nor a conflict: ${describe(e)}`);
      close();
    }
  }
  close();
  return loops;
}

/** Lines of an invocation's output that say this writer's loop gave up (the RetriesExhausted message, or the report endpoint's). */
function giveUpLines(output: string, writer: string, target: string, maxAttempts: number): number {
  const text = `${writer} of ${target} gave up after ${maxAttempts} write conflicts in a row`;
  return output
    .split('\n')
    .filter(
      (line) =>
        line.includes(text) ||
        (writer === 'report' && line.includes('"report write kept conflicting"') && line.includes(target)),
    ).length;
}

/** Totals per writer over some invocations: writes, conflicts, loops and the most conflicts in one loop. */
export function perWriter(
  account: WriteAccount,
  labels: string[],
): Map<string, { writes: number; conflicts: number; loops: number; longest: number }> {
  const totals = new Map<string, { writes: number; conflicts: number; loops: number; longest: number }>();
  for (const label of labels) {
    for (const [writer, t] of account.byInvocation.get(label) ?? []) {
      const sum = totals.get(writer) ?? { writes: 0, conflicts: 0, loops: 0, longest: 0 };
      sum.writes += t.writes;
      sum.conflicts += t.conflicts;
      sum.loops += t.loops.length;
      sum.longest = Math.max(sum.longest, ...t.loops.map((l) => l.conflicts));
      totals.set(writer, sum);
    }
  }
  return totals;
}
