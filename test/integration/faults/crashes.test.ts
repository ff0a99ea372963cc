import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isRunPod, runIdOf } from '../../../lib/check/run-label.ts';
import {
  type ActiveRun,
  readAcceptedReport,
  readActiveRun,
  readLastOutcome,
} from '../../../lib/state/khstate.ts';
import type { KhState } from '../../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { checkerContainer } from './helpers/checker.ts';
import { type FaultRow, ms, recordFault } from './helpers/fault-table.ts';
import { checkPods, noLivePods, recordedOutcomes, stateProblems } from './helpers/invariants.ts';
import { type Runner, type RunnerExit, resultOf, startRunner, stopRunner } from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Crashes: the runner SIGKILLed at each phase of a run (the KHRUN_FAILPOINT_KILL_AT failpoint of
// functions/cli.ts), then at random moments. After the next invocation: no live pod of the killed run,
// a consistent khstate carrying the killed run's outcome (nothing lost, nothing recorded twice), and
// the check's next run succeeds. A 2 s lease makes adoption quick.

const kc = adminKubeConfig();
let ns: string;
let tally: ReportTally;
const started: Runner[] = [];
/** The rows, written in PHASES order (then the random kills) once the concurrent tests are done. */
const phaseRows = new Map<string, FaultRow>();
const LEASE = { KHRUN_LEASE_SECONDS: '2' };
const RANDOM_KILLS = Number(process.env.KHRUN_FAULTS_RANDOM_KILLS ?? 10);
const RANDOM_BUDGET_MS = Number(process.env.KHRUN_FAULTS_RANDOM_BUDGET_MS ?? 150_000);
const SEED = Number(process.env.KHRUN_FAULTS_SEED ?? 20_260_601);
/** Random kills land between this long after the runner starts and the end of a measured, unkilled run. */
const KILL_FROM_MS = 300;

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-crash');
  tally = await startReportTally(kc, inject('hostIp'));
});
afterAll(async () => {
  for (const r of started) await stopRunner(r);
  await tally?.close();
  for (const key of [...PHASES.map((p) => p.phase), 'random']) {
    const row = phaseRows.get(key);
    if (row) await recordFault(row);
  }
  await dropNamespace(kc, ns);
});

function run(check: string, env: Record<string, string> = {}): Runner {
  const runner = startRunner(check, ns, { ...LEASE, ...env });
  started.push(runner);
  return runner;
}

/** Resolves at an absolute time: a lease's end is written in the khstate, so this is no guess. */
function until(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now()) + 50));
}

/**
 * Runs the check until an invocation records an outcome (each one before the killed run's lease runs out
 * skips). Bounded: 6 invocations and 60 s.
 */
async function recover(check: string, orphan: ActiveRun | undefined) {
  const deadline = Date.now() + 60_000;
  const exits: RunnerExit[] = [];
  for (let i = 0; i < 6 && Date.now() < deadline; i++) {
    if (orphan) await until(orphan.leaseUntilMs);
    const exit = await run(check).done;
    exits.push(exit);
    const result = resultOf(exit);
    if (result?.result !== 'busy') return { exit, result, invocations: exits.length };
  }
  throw new Error(
    `no invocation of ${check} recorded an outcome: ${exits.map((e) => e.stdout.slice(-500)).join('\n')}`,
  );
}

function expectRecorded(exit: RunnerExit, result: Record<string, unknown> | undefined, expected: object) {
  expect(result, `${exit.stdout.slice(-3000)}\n${exit.stderr.slice(-2000)}`).toMatchObject(expected);
  expect(exit.code).toBe(0);
}

const PHASES = [
  { phase: 'claimed', label: 'after the claim' },
  { phase: 'pod created', label: 'after the pod is created' },
  { phase: 'report received', label: 'after the report is received' },
  { phase: 'recording', label: 'just before the outcome is written' },
] as const;

describe('the runner SIGKILLed', () => {
  it.concurrent.each(PHASES)(
    '$label: the next invocation finishes the run; the next run succeeds',
    async ({ phase, label }) => {
      const check = `kill-${phase.replace(' ', '-')}`;
      await createCheck(kc, ns, check, {
        containers: [checkerContainer({ delayMs: 1000, notifyUrl: tally.url(check) })],
      });
      const killed = await run(check, { KHRUN_FAILPOINT_KILL_AT: phase }).done;
      expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL');
      const orphaned = await readState(kc, ns, check);
      const orphan = readActiveRun(orphaned);
      expect(orphan, 'the killed run is left in the khstate').toBeDefined();
      // The runner hosts the endpoint, so a report it received becomes the outcome in one write, answered
      // 200 only then: killed before that write, it stored nothing and its checker got no answer. The
      // adopter finds the pod's endpoint dead, replaces the pod, and records the new pod's report.
      if (phase === 'report received' || phase === 'recording')
        expect(readAcceptedReport(orphaned)).toBeUndefined();
      const killedAtMs = Date.now();

      const { exit, result, invocations } = await recover(check, orphan);
      const recoveredInMs = Date.now() - killedAtMs;
      expectRecorded(exit, result, { result: 'recorded', kind: 'Succeeded', adopted: true });
      const state = await readState(kc, ns, check);
      expect(stateProblems(state, ns)).toEqual([]);
      expect(state?.spec.uuid, 'the killed run is the one recorded').toBe(orphan?.uuid);
      expect(recordedOutcomes(state)).toBe(1);
      const pods = await noLivePods(kc, ns, check);
      expect(pods.filter((p) => runIdOf(p) !== orphan?.uuid)).toEqual([]);

      const next = await run(check).done;
      expectRecorded(next, resultOf(next), { result: 'recorded', kind: 'Succeeded', adopted: false });
      const after = await readState(kc, ns, check);
      expect(stateProblems(after, ns)).toEqual([]);
      expect(recordedOutcomes(after)).toBe(2);
      // The killed run and the next one: each run's report counted once, however many pods it took.
      const reported = tally.runs(check);
      phaseRows.set(phase, {
        fault: `crash: runner SIGKILLed ${label} (failpoint \`${phase}\`), then the next run`,
        runs: 2,
        outcome: `adopted by the ${ordinal(invocations)} invocation after the kill, ${readLastOutcome(state)?.kind} recorded ${ms(recoveredInMs)} after it; ${pods.length} pod(s) left, none live; next run ${readLastOutcome(after)?.kind}`,
        reported: reported.length,
        recorded: recordedOf(reported, [state?.spec.uuid, after?.spec.uuid]),
      });
    },
  );

  it('at random moments: every killed run is finished by the next invocation, none lost or recorded twice', async () => {
    const random = mulberry32(SEED);
    const lanes = 2;
    const deadline = Date.now() + RANDOM_BUDGET_MS;
    const points = new Map<string, number>();
    let kills = 0;
    let notRecorded = 0;
    const seenRecorded: Array<string | undefined> = [];
    let windowMs = 0;
    const problems: string[] = [];
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        const check = `random-kill-${lane}`;
        await createCheck(kc, ns, check, {
          containers: [checkerContainer({ delayMs: 1000, notifyUrl: tally.url(check) })],
        });
        // One run left alone sets the window: kills land anywhere from start-up to the end of such a run.
        const startedAt = performance.now();
        const whole = await run(check).done;
        const runMs = performance.now() - startedAt;
        windowMs = Math.max(windowMs, runMs);
        if (resultOf(whole)?.kind !== 'Succeeded') problems.push(`${check}: the unkilled run failed`);
        for (let i = lane; i < RANDOM_KILLS && Date.now() < deadline; i += lanes) {
          const before = await readState(kc, ns, check);
          const delayMs = KILL_FROM_MS + Math.floor(random() * Math.max(0, runMs - KILL_FROM_MS));
          const runner = run(check);
          const timer = setTimeout(() => runner.child.kill('SIGKILL'), delayMs);
          const exit = await runner.done;
          clearTimeout(timer);
          kills++;
          const killedState = await readState(kc, ns, check);
          seenRecorded.push(readLastOutcome(before)?.uuid, readLastOutcome(killedState)?.uuid);
          const point = await killPoint(check, before, killedState, exit);
          points.set(point, (points.get(point) ?? 0) + 1);
          const orphan = readActiveRun(killedState);
          const { exit: recovered, result } = await recover(check, orphan);
          const state = await readState(kc, ns, check);
          seenRecorded.push(readLastOutcome(state)?.uuid);
          const where = `${check} #${i} (killed at ${delayMs} ms, ${point})`;
          if (result?.result !== 'recorded' || result.kind !== 'Succeeded' || recovered.code !== 0)
            problems.push(`${where}: recovery ended ${JSON.stringify(result)}`);
          problems.push(...stateProblems(state, ns).map((p) => `${where}: ${p}`));
          if (orphan && state?.spec.uuid !== orphan.uuid) {
            notRecorded++;
            problems.push(`${where}: the killed run ${orphan.uuid.slice(0, 8)} was not the one recorded`);
          }
          const finished = point === RECORDED_BEFORE_KILL || point === FINISHED_BEFORE_KILL;
          const expected = recordedOutcomes(before) + (finished ? 2 : 1);
          if (recordedOutcomes(state) !== expected)
            problems.push(`${where}: ${recordedOutcomes(state)} outcomes recorded, expected ${expected}`);
          await noLivePods(kc, ns, check).catch((e: unknown) => problems.push(`${where}: ${String(e)}`));
        }
        const next = await run(check).done;
        seenRecorded.push(readLastOutcome(await readState(kc, ns, check))?.uuid);
        const result = resultOf(next);
        if (result?.kind !== 'Succeeded' || result.adopted !== false)
          problems.push(`${check}: the next run ended ${JSON.stringify(result)}`);
      }),
    );
    expect(problems).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(Math.min(RANDOM_KILLS, 4));
    const where = [...points.entries()].map(([p, n]) => `${n}× ${p}`).join('; ');
    // Every run of the lanes: the unkilled ones, the killed ones and their recoveries, the last ones.
    const reported = Array.from({ length: lanes }, (_, lane) => tally.runs(`random-kill-${lane}`)).flat();
    phaseRows.set('random', {
      fault: `crash: runner SIGKILLed at a random moment (${ms(KILL_FROM_MS)} to ${ms(windowMs)} after start, the length of an unkilled run; seed ${SEED})`,
      runs: kills,
      outcome: `${kills - notRecorded} of ${kills} killed runs finished by the next invocation, consistent khstate, no live pod left, next run Succeeded; ${reported.length} runs in all (with the unkilled first and last of each of ${lanes} checks). Where the kills landed: ${where}`,
      reported: reported.length,
      recorded: recordedOf(reported, seenRecorded),
    });
  }, 300_000);
});

const RECORDED_BEFORE_KILL = 'after the outcome was written';
const FINISHED_BEFORE_KILL = 'the run had finished already';

/** Where in the run the kill landed, read from what it left behind. */
async function killPoint(
  check: string,
  before: KhState | null,
  after: KhState | null,
  exit: RunnerExit,
): Promise<string> {
  if (recordedOutcomes(after) > recordedOutcomes(before))
    return exit.signal ? RECORDED_BEFORE_KILL : FINISHED_BEFORE_KILL;
  const run = readActiveRun(after);
  if (!run) return 'before the claim';
  if (readAcceptedReport(after)?.uuid === run.uuid) return 'report stored, outcome not yet written';
  const pods = (await checkPods(kc, ns, check)).filter((p) => isRunPod(p, run.uuid));
  return pods.length ? 'pod created, no report yet' : 'claimed, no pod yet';
}

function ordinal(n: number): string {
  return ['first', 'second', 'third', 'fourth', 'fifth', 'sixth'][n - 1] ?? `${n}th`;
}

/** A small seeded PRNG, so a failing sequence of kill delays can be replayed with KHRUN_FAULTS_SEED. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
