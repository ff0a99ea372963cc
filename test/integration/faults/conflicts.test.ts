import { CustomObjectsApi, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readAcceptedReport, readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL } from '../../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { auditEvents } from './helpers/audit.ts';
import { checkerContainer } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { recordedOutcomes, stateProblems } from './helpers/invariants.ts';
import {
  logLines,
  type Runner,
  type RunnerExit,
  resultOf,
  startRunner,
  stopRunner,
} from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';
import { accountKhStateWrites, type Invocation, perWriter } from './helpers/write-loops.ts';

// Conflicts: while the runner claims, renews its lease and records, and its report endpoint stores the
// report, another writer keeps changing the same khstate (an annotation, as `kubectl annotate` would: a
// patch with no resourceVersion, so every write of the runner made from an older read conflicts). Every
// report must end up in the khstate, the other writer's last write too, and the retries stay bounded.
// The bound holds per write loop (claim, lease renewal, report, record: each retries on its own), so each
// write is attributed to its loop: the API server's audit log names it (user agent `khrun/<writer>`), the
// runner's DEBUG log numbers its attempts, and the two must agree conflict for conflict.

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
let ns: string;
let tally: ReportTally;
const runners: Runner[] = [];
const NOISE = 'fault.khrun.dev/other-writer';
const MAX_NOISE_WRITES = 3_000;
const NOISE_LIMIT_MS = 60_000;
/** The other writer's user agent: its patches are the only khstate writes not made by a loop of khrun. */
const OTHER_WRITER_AGENT = 'khrun-fault-test/other-writer';
const otherWriterAgent = setHeaderOptions('User-Agent', OTHER_WRITER_AGENT);
/** Each write loop's bound on attempts, so on conflicts in a row (ITERATION_DEFAULTS.maxConflictRetries). */
const MAX_ATTEMPTS = 8;

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-conflict');
  tally = await startReportTally(kc, inject('hostIp'));
});
afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  await tally?.close();
  await dropNamespace(kc, ns);
});

/**
 * The other writer: patches its annotation every pauseMs (0: as fast as the API answers, one at a time)
 * until stopped; bounded by count and time.
 */
async function otherWriter(check: string, stop: AbortSignal, pauseMs: number): Promise<number> {
  const until = Date.now() + NOISE_LIMIT_MS;
  let writes = 0;
  while (!stop.aborted && writes < MAX_NOISE_WRITES && Date.now() < until) {
    await custom.patchNamespacedCustomObject(
      {
        group: KH_GROUP,
        version: KH_VERSION,
        plural: KHSTATE_PLURAL,
        namespace: ns,
        name: check,
        body: [
          { op: 'add', path: `/metadata/annotations/${NOISE.replace('/', '~1')}`, value: String(writes + 1) },
        ],
      },
      otherWriterAgent,
    );
    writes++;
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return writes;
}

/** Resolves at an absolute time: a lease's end is written in the khstate, so this is no guess. */
function until(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now()) + 50));
}

interface Ran {
  invocation: Invocation;
  exit: RunnerExit;
}

/**
 * One `khrun run` of the check at DEBUG (so every conflict is logged with its writer and attempt), timed
 * from outside: its requests are the ones the API server received between startedMs and endedMs.
 */
async function invoke(check: string, label: string, env: Record<string, string> = {}): Promise<Ran> {
  const startedMs = Date.now();
  const runner = startRunner(check, ns, { ...env, POWERTOOLS_LOG_LEVEL: 'DEBUG' });
  runners.push(runner);
  const exit = await runner.done;
  const output = `${exit.stdout}${exit.stderr}`;
  return { exit, invocation: { label: `${check} ${label}`, check, startedMs, endedMs: Date.now(), output } };
}

interface Stressed {
  check: string;
  first: Ran;
  /** The run the first invocation recorded, read from the khstate right after it. */
  firstRecorded: string | undefined;
  /** The invocation that ran while the other writer wrote. */
  stressed: Ran;
  otherWrites: number;
  /** The invocation after the writer stopped, when the stressed one could not record. */
  recovery?: Ran;
}

/**
 * Runs each check once quietly (so its khstate exists), then again with the other writer going, and,
 * when that invocation gave up on conflicts (exit 1, run left in the khstate), once more after the
 * writer stopped, as the next CronJob run would. The invocations of one check never overlap.
 */
async function stressed(checks: string[], pauseMs: number): Promise<Stressed[]> {
  return Promise.all(
    checks.map(async (check) => {
      await createCheck(kc, ns, check, {
        containers: [checkerContainer({ delayMs: 1500, notifyUrl: tally.url(check) })],
      });
      const first = await invoke(check, 'first');
      const firstRecorded = readLastOutcome(await readState(kc, ns, check))?.uuid;

      const stop = new AbortController();
      const running = invoke(check, 'stressed', { KHRUN_LEASE_SECONDS: '2' });
      const writing = otherWriter(check, stop.signal, pauseMs);
      const ran = await running;
      stop.abort();
      const otherWrites = await writing;
      if (ran.exit.code === 0) return { check, first, firstRecorded, stressed: ran, otherWrites };
      const left = readActiveRun(await readState(kc, ns, check));
      if (left) await until(left.leaseUntilMs);
      const recovery = await invoke(check, 'recovery');
      return { check, first, firstRecorded, stressed: ran, otherWrites, recovery };
    }),
  );
}

/** The loop a `khrun run` that gave up names in its exit message, e.g. `record`. */
const GAVE_UP = /khrun: run of \S+ failed: (\S+) of \S+ gave up after (\d+) write conflicts in a row/;

/** The order writers are listed in the table: a run's own order. */
const WRITER_ORDER = ['claim', 'lease', 'report', 'record', 'release'];
const writerRank = (w: string) => (WRITER_ORDER.indexOf(w) + 1 || WRITER_ORDER.length + 1) * 1000;

/**
 * Checks every run's end state, attributes every khstate write to its loop (helpers/write-loops.ts) and
 * sums up the stressed invocations and their recoveries per writer.
 */
async function assess(results: Stressed[]) {
  const account = accountKhStateWrites(
    await auditEvents(kc, ns),
    results.flatMap((r) =>
      [r.first, r.stressed, ...(r.recovery ? [r.recovery] : [])].map((x) => x.invocation),
    ),
    { namespace: ns, maxAttempts: MAX_ATTEMPTS, testAgents: [OTHER_WRITER_AGENT] },
  );
  const problems = [...account.problems];
  const sum = {
    runs: results.length,
    otherWrites: 0,
    gaveUp: [] as string[],
    notRecorded: 0,
    reported: 0,
    recorded: 0,
  };
  const underFire: string[] = [];
  for (const { check, first, firstRecorded, stressed: ran, otherWrites, recovery } of results) {
    sum.otherWrites += otherWrites;
    const firstResult = resultOf(first.exit);
    if (firstResult?.result !== 'recorded' || firstResult.kind !== 'Succeeded')
      problems.push(`${check}, first run: exit ${first.exit.code}\n${first.exit.stderr.slice(-1500)}`);
    underFire.push(ran.invocation.label, ...(recovery ? [recovery.invocation.label] : []));
    const final = (recovery ?? ran).exit;
    const result = resultOf(final);
    const state = await readState(kc, ns, check);
    if (recovery) {
      // Giving up is allowed only the bounded way: exit 1 when one loop hit the conflict limit (the
      // account shows that loop), the run left for the next invocation to adopt.
      const [, writer = '', attempts] = GAVE_UP.exec(ran.exit.stderr) ?? [];
      const loops = account.byInvocation.get(ran.invocation.label)?.get(writer)?.loops ?? [];
      if (ran.exit.code !== 1 || Number(attempts) !== MAX_ATTEMPTS)
        problems.push(
          `${check}: the stressed run ended with exit ${ran.exit.code}:\n${ran.exit.stderr.slice(-1500)}`,
        );
      else if (!loops.some((l) => l.conflicts === MAX_ATTEMPTS && !l.written))
        problems.push(
          `${check}: the stressed run says ${writer} gave up, but no ${writer} loop of it hit ${MAX_ATTEMPTS} conflicts`,
        );
      else sum.gaveUp.push(writer);
    }
    if (final.code !== 0 || result?.kind !== 'Succeeded') {
      sum.notRecorded++;
      problems.push(`${check}: exit ${final.code}, ${JSON.stringify(result)}\n${final.stderr.slice(-1500)}`);
    }
    problems.push(...stateProblems(state, ns).map((p) => `${check}: ${p}`));
    // Both runs of the check (the quiet first one and the one under fire), counted per run.
    const reported = tally.runs(check);
    sum.reported += reported.length;
    sum.recorded += recordedOf(reported, [firstRecorded, readLastOutcome(state)?.uuid]);
    if (readAcceptedReport(state)?.uuid !== state?.spec.uuid || readLastOutcome(state)?.kind !== 'Succeeded')
      problems.push(`${check}: the accepted report is not the recorded outcome`);
    if (recordedOutcomes(state) !== 2)
      problems.push(`${check}: ${recordedOutcomes(state)} outcomes recorded`);
    if (state?.metadata.annotations?.[NOISE] !== String(otherWrites))
      problems.push(`${check}: the other writer's last write (${otherWrites}) is not in the khstate`);
    // The audit log must hold every request, or the attribution above proves nothing.
    if (account.testWrites.get(check) !== otherWrites)
      problems.push(
        `${check}: the audit log holds ${account.testWrites.get(check) ?? 0} of the other writer's ${otherWrites} patches`,
      );
    // The report's write: the runner's own endpoint hands it to the run, whose record loop writes it as the
    // outcome (its log line says recordedAsOutcome); one it declines is stored by the report loop, whose
    // line carries the attempt that landed. Either way the write is a loop of the account above.
    for (const { exit, invocation } of [ran, ...(recovery ? [recovery] : [])]) {
      const accepted = logLines(`${exit.stdout}${exit.stderr}`).filter(
        (l) => l.message === 'report accepted',
      );
      for (const line of accepted) {
        if (line.recordedAsOutcome === true) continue;
        if (typeof line.attempt !== 'number' || line.attempt > MAX_ATTEMPTS)
          problems.push(`${invocation.label}: a report accepted at attempt ${String(line.attempt)}`);
      }
    }
  }
  const writers = [...perWriter(account, underFire)].sort(
    ([a], [b]) => writerRank(a) - writerRank(b) || a.localeCompare(b),
  );
  const total = (k: 'writes' | 'conflicts' | 'loops') => writers.reduce((n, [, t]) => n + t[k], 0);
  const longest = Math.max(0, ...writers.map(([, t]) => t.longest));
  /** The most conflicts in a row a report's write met (the record loop, or the report loop's). */
  const reportConflicts = Math.max(
    0,
    ...writers.filter(([w]) => w === 'record' || w === 'report').map(([, t]) => t.longest),
  );
  if (total('conflicts') === 0) problems.push('the other writer never made the runner conflict');
  if (longest > MAX_ATTEMPTS) problems.push(`a loop retried past its bound: ${longest} conflicts in a row`);
  return {
    ...sum,
    problems,
    reportConflicts,
    writes: total('writes'),
    conflicts: total('conflicts'),
    loops: total('loops'),
    longest,
    longestBy: writers.filter(([, t]) => t.longest === longest).map(([w]) => w),
    perWriter: writers.map(([w, t]) => `${w} ${t.conflicts}/${t.writes}`).join(', '),
  };
}

/** What the runner's writes in a row show, for the table: counted per loop, attributed by the audit log. */
function attributedWrites(s: Awaited<ReturnType<typeof assess>>): string {
  return `${s.reported} runs reported (the quiet first run and the run under fire of each check); ${s.conflicts} of the runner's ${s.writes} khstate writes conflicted (409) and were retried, in ${s.loops} write loops (conflicts/writes per loop kind: ${s.perWriter}; each write attributed to its loop by its user agent in the audit log, each 409 matched to an attempt the runner logged); at most ${s.longest} conflicts in a row within one loop (${s.longestBy.join(', ')}; bound: ${MAX_ATTEMPTS} attempts per loop)`;
}

function gaveUpText({ runs, gaveUp, notRecorded }: Awaited<ReturnType<typeof assess>>): string {
  const recordedUnderFire = runs - gaveUp.length - notRecorded;
  return gaveUp.length === 0
    ? `${recordedUnderFire} of ${runs} runs recorded under fire, none gave up`
    : `${recordedUnderFire} of ${runs} runs recorded under fire, ${gaveUp.length} gave up when one loop hit ${MAX_ATTEMPTS} conflicts in a row (${gaveUp.join(', ')}; exit 1, run left in the khstate) and the next invocation recorded it`;
}

describe('another writer on the khstate while the runner and the report endpoint write', () => {
  it('a busy writer (one patch every 50 ms per khstate): retries stay bounded, every report recorded, nothing lost', async () => {
    const fault =
      'conflicts: another writer patches each khstate every 50 ms during the runs (4 checks at once)';
    const row = faultScenario(fault);
    const s = await assess(await stressed(['busy-a', 'busy-b', 'busy-c', 'busy-d'], 50));
    // On a loaded machine even a 50 ms writer can push one loop to its bound: that run exits 1 by design and
    // the next invocation records it, which assess() checks. Correct code must not fail here for it.
    await row.record({
      fault,
      runs: s.runs,
      outcome: outcomeText(s),
      reported: s.reported,
      recorded: s.recorded,
    });
    expect(s.problems).toEqual([]);
    expect(s.reportConflicts, 'each report written within its bound').toBeLessThanOrEqual(MAX_ATTEMPTS);
  }, 180_000);

  it('a hammering writer (patches back to back): retries stay bounded, and nothing is lost', async () => {
    const fault =
      'conflicts: another writer patches each khstate back to back, as fast as the API answers (4 checks at once)';
    const row = faultScenario(fault);
    const s = await assess(await stressed(['hammer-a', 'hammer-b', 'hammer-c', 'hammer-d'], 0));
    await row.record({
      fault,
      runs: s.runs,
      outcome: outcomeText(s),
      reported: s.reported,
      recorded: s.recorded,
    });
    expect(s.problems).toEqual([]);
    expect(s.reportConflicts, 'each report written within its bound').toBeLessThanOrEqual(MAX_ATTEMPTS);
  }, 180_000);
});

function outcomeText(s: Awaited<ReturnType<typeof assess>>): string {
  return `${s.otherWrites} other writes; ${attributedWrites(s)}; each run's report written as its outcome after at most ${s.reportConflicts} conflicts in a row (the record loop of the runner's endpoint, or the report loop); ${gaveUpText(s)}; the other writer's last write kept`;
}
