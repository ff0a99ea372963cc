import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isRunPod, runIdOf } from '../../../lib/check/run-label.ts';
import {
  type ActiveRun,
  readAcceptedReport,
  readActiveRun,
  readLastOutcome,
} from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { checkerContainer } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms } from './helpers/fault-table.ts';
import {
  checkPods,
  noLivePods,
  podsLeft,
  recordedOutcomes,
  stateProblems,
  waitForState,
} from './helpers/invariants.ts';
import { type Runner, type RunnerExit, resultOf, startRunner, stopRunner } from './helpers/khrun-process.ts';
import { isLiveKill, KILL_POINTS, type KillPoint, killPoint } from './helpers/kill-point.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Crashes: the runner SIGKILLed at each phase of a run (the KHRUN_FAILPOINT_KILL_AT failpoint of
// functions/cli.ts), then at random moments. After the next invocation: no live pod of the killed run,
// a consistent khstate carrying the killed run's outcome (nothing lost, nothing recorded twice), and
// the check's next run succeeds. A 2 s lease makes adoption quick. Each scenario records its row before it
// asserts; a random kill counts only when its signal was sent while the run was live (helpers/kill-point.ts),
// so its timer starts when the test sees the run claimed, and runs a random part of an unkilled run's life.

const kc = adminKubeConfig();
let ns: string;
let tally: ReportTally;
const started: Runner[] = [];
const LEASE = { KHRUN_LEASE_SECONDS: '2' };
/** How many kills of a live run the random scenario makes (and asserts it made). */
const RANDOM_KILLS = Number(process.env.KHRUN_FAULTS_RANDOM_KILLS ?? 10);
/** Attempts at most (a kill may land before the claim or after the outcome): bounded, with the time budget. */
const RANDOM_ATTEMPTS = 3 * RANDOM_KILLS;
const RANDOM_BUDGET_MS = Number(process.env.KHRUN_FAULTS_RANDOM_BUDGET_MS ?? 240_000);
const SEED = Number(process.env.KHRUN_FAULTS_SEED ?? 20_260_601);

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-crash');
  tally = await startReportTally(kc, inject('hostIp'));
});
afterAll(async () => {
  for (const r of started) await stopRunner(r);
  await tally?.close();
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
 * skips). Bounded: 6 invocations and 60 s; the last invocation's end either way, for the row to show.
 */
async function recover(check: string, orphan: ActiveRun | undefined) {
  const deadline = Date.now() + 60_000;
  let last:
    | { exit: RunnerExit; result: Record<string, unknown> | undefined; invocations: number }
    | undefined;
  for (let i = 0; i < 6 && Date.now() < deadline; i++) {
    if (orphan) await until(orphan.leaseUntilMs);
    const exit = await run(check).done;
    last = { exit, result: resultOf(exit), invocations: i + 1 };
    if (last.result?.result !== 'busy') return last;
  }
  if (!last) throw new Error(`no invocation of ${check} started within 60 s`);
  return last;
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
  it.concurrent.for(PHASES.map((p, rank) => ({ ...p, rank })))(
    '$label: the next invocation finishes the run; the next run succeeds',
    async ({ phase, label, rank }, test) => {
      const fault = `crash: runner SIGKILLed ${label} (failpoint \`${phase}\`), then the next run`;
      const row = faultScenario(fault, test);
      const check = `kill-${phase.replace(' ', '-')}`;
      await createCheck(kc, ns, check, {
        containers: [checkerContainer({ delayMs: 1000, notifyUrl: tally.url(check) })],
      });
      const killed = await run(check, { KHRUN_FAILPOINT_KILL_AT: phase }).done;
      const orphaned = await readState(kc, ns, check);
      const orphan = readActiveRun(orphaned);
      const killedAtMs = Date.now();

      const { exit, result, invocations } = await recover(check, orphan);
      const recoveredInMs = Date.now() - killedAtMs;
      const state = await readState(kc, ns, check);
      const { pods, live } = await podsLeft(kc, ns, check);
      const next = await run(check).done;
      const after = await readState(kc, ns, check);
      // The killed run and the next one: each run's report counted once, however many pods it took.
      const reported = tally.runs(check);
      await row.record({
        fault,
        rank,
        runs: 2,
        outcome: `adopted by the ${ordinal(invocations)} invocation after the kill, ${readLastOutcome(state)?.kind} recorded ${ms(recoveredInMs)} after it; ${pods.length} pod(s) left, ${live.length} live; next run ${readLastOutcome(after)?.kind}`,
        reported: reported.length,
        recorded: recordedOf(reported, [state?.spec.uuid, after?.spec.uuid]),
      });

      expect(killed.signal, killed.stdout + killed.stderr).toBe('SIGKILL');
      expect(orphan, 'the killed run is left in the khstate').toBeDefined();
      // The runner hosts the endpoint, so a report it received becomes the outcome in one write, answered
      // 200 only then: killed before that write, it stored nothing and its checker got no answer. The
      // adopter finds the pod's endpoint dead, replaces the pod, and records the new pod's report.
      if (phase === 'report received' || phase === 'recording')
        expect(readAcceptedReport(orphaned)).toBeUndefined();
      expectRecorded(exit, result, { result: 'recorded', kind: 'Succeeded', adopted: true });
      expect(stateProblems(state, ns)).toEqual([]);
      expect(state?.spec.uuid, 'the killed run is the one recorded').toBe(orphan?.uuid);
      expect(recordedOutcomes(state)).toBe(1);
      expect(live, 'no live pod left').toEqual([]);
      expect(pods.filter((p) => runIdOf(p) !== orphan?.uuid)).toEqual([]);
      expectRecorded(next, resultOf(next), { result: 'recorded', kind: 'Succeeded', adopted: false });
      expect(stateProblems(after, ns)).toEqual([]);
      expect(recordedOutcomes(after)).toBe(2);
    },
  );

  it(`at random moments: ${RANDOM_KILLS} kills of a live run, each finished by the next invocation, none lost or recorded twice`, async () => {
    const fault = 'crash: runner SIGKILLed at a random moment';
    const row = faultScenario(fault);
    const random = mulberry32(SEED);
    const lanes = 2;
    const deadline = Date.now() + RANDOM_BUDGET_MS;
    const points = new Map<KillPoint, number>();
    let attempts = 0;
    let liveKills = 0;
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
        // One run left alone sets the window: a run lives from its claim to its outcome.
        const whole = await run(check).done;
        const first = readLastOutcome(await readState(kc, ns, check));
        const liveMs = Math.max(0, (first?.finishedAtMs ?? 0) - (first?.startedAtMs ?? 0));
        windowMs = Math.max(windowMs, liveMs);
        seenRecorded.push(first?.uuid);
        if (resultOf(whole)?.kind !== 'Succeeded') problems.push(`${check}: the unkilled run failed`);
        while (liveKills < RANDOM_KILLS && attempts < RANDOM_ATTEMPTS && Date.now() < deadline) {
          const i = ++attempts;
          const before = await readState(kc, ns, check);
          const delayMs = Math.floor(random() * liveMs);
          const name = `random-${lane}-${i}`;
          const runner = run(check, { POD_NAME: name });
          // The timer starts once the test sees this runner's claim (or never, if it ends first).
          let signalSent = false;
          let timer: NodeJS.Timeout | undefined;
          const ended = new AbortController();
          void runner.done.then(() => ended.abort());
          void waitForState(
            kc,
            ns,
            check,
            (s) => (readActiveRun(s)?.runner === name ? true : undefined),
            'the claim',
            60_000,
            ended.signal,
          ).then(
            () => {
              if (ended.signal.aborted) return;
              timer = setTimeout(() => {
                signalSent = runner.child.kill('SIGKILL');
              }, delayMs);
            },
            () => undefined,
          );
          const exit = await runner.done;
          clearTimeout(timer);
          // The runner is dead: the khstate and pods are as it left them at the kill.
          const killedState = await readState(kc, ns, check);
          const orphan = readActiveRun(killedState);
          const runPodExists =
            orphan !== undefined && (await checkPods(kc, ns, check)).some((p) => isRunPod(p, orphan.uuid));
          const point = killPoint({
            signalSent,
            exitSignal: exit.signal,
            before,
            after: killedState,
            runPodExists,
          });
          points.set(point, (points.get(point) ?? 0) + 1);
          if (isLiveKill(point)) liveKills++;
          seenRecorded.push(readLastOutcome(before)?.uuid, readLastOutcome(killedState)?.uuid);
          const { exit: recovered, result } = await recover(check, orphan);
          const state = await readState(kc, ns, check);
          seenRecorded.push(readLastOutcome(state)?.uuid);
          const where = `${check} #${i} (kill timer ${delayMs} ms after the claim: ${point})`;
          if (result?.result !== 'recorded' || result.kind !== 'Succeeded' || recovered.code !== 0)
            problems.push(`${where}: recovery ended ${JSON.stringify(result)}`);
          problems.push(...stateProblems(state, ns).map((p) => `${where}: ${p}`));
          if (orphan && state?.spec.uuid !== orphan.uuid) {
            notRecorded++;
            problems.push(`${where}: the killed run ${orphan.uuid.slice(0, 8)} was not the one recorded`);
          }
          // A runner that was not killed, or killed after its outcome was written, recorded its run itself.
          const ranItself = point === KILL_POINTS.recorded || !isKill(point);
          const expected = recordedOutcomes(before) + (ranItself ? 2 : 1);
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
    const where = [...points.entries()].map(([p, n]) => `${n}× ${p}`).join('; ');
    // Every run of the lanes: the unkilled ones, the killed ones and their recoveries, the last ones.
    const reported = Array.from({ length: lanes }, (_, lane) => tally.runs(`random-kill-${lane}`)).flat();
    await row.record({
      fault: `${fault} (a timer 0 to ${ms(windowMs)} after the test saw the claim, the life of an unkilled run; seed ${SEED}): kills of a live run counted`,
      rank: PHASES.length,
      runs: liveKills,
      outcome: `${liveKills} kills of a live run (signal sent, run claimed and not recorded) in ${attempts} attempts; ${liveKills - notRecorded} of ${liveKills} finished by the next invocation, consistent khstate, no live pod left, next run Succeeded; ${reported.length} runs in all (with the unkilled first and last of each of ${lanes} checks). Where the timers landed: ${where}`,
      reported: reported.length,
      recorded: recordedOf(reported, seenRecorded),
    });
    expect(problems).toEqual([]);
    expect(liveKills, `kills of a live run (${where})`).toBeGreaterThanOrEqual(RANDOM_KILLS);
  }, 400_000);
});

/** Whether the runner died of the signal at all (it may have exited before the timer fired). */
const isKill = (point: KillPoint) => point !== KILL_POINTS.notSent && point !== KILL_POINTS.exitedFirst;

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
