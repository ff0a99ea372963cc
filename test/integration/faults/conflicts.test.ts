import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAcceptedReport, readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL } from '../../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { type AuditEvent, auditEvents } from './helpers/audit.ts';
import { checkerContainer } from './helpers/checker.ts';
import { recordFault } from './helpers/fault-table.ts';
import { recordedOutcomes, stateProblems } from './helpers/invariants.ts';
import {
  logLines,
  type Runner,
  type RunnerExit,
  resultOf,
  startRunner,
  stopRunner,
} from './helpers/khrun-process.ts';

// Conflicts: while the runner claims, renews its lease and records, and its report endpoint stores the
// report, another writer keeps changing the same khstate (an annotation, as `kubectl annotate` would: a
// patch with no resourceVersion, so every write of the runner made from an older read conflicts). Every
// report must end up in the khstate, the other writer's last write too, and the retries stay bounded;
// the conflicts are counted at the API server (its audit log).

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
let ns: string;
const runners: Runner[] = [];
const NOISE = 'fault.khrun.dev/other-writer';
const MAX_NOISE_WRITES = 3_000;
const NOISE_LIMIT_MS = 60_000;
/** The runner's and the report endpoint's bound on conflicting writes in a row (ITERATION_DEFAULTS). */
const MAX_ATTEMPTS = 8;

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-conflict');
});
afterAll(async () => {
  for (const r of runners) await stopRunner(r);
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
    await custom.patchNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
      namespace: ns,
      name: check,
      body: [
        { op: 'add', path: `/metadata/annotations/${NOISE.replace('/', '~1')}`, value: String(writes + 1) },
      ],
    });
    writes++;
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return writes;
}

/** The longest run of 409s among a khstate's updates, in the order the API server answered them. */
function longestConflictRun(events: AuditEvent[]): number {
  let longest = 0;
  let current = 0;
  for (const e of [...events].sort((a, b) => a.stageTimestamp.localeCompare(b.stageTimestamp))) {
    current = e.responseStatus?.code === 409 ? current + 1 : 0;
    longest = Math.max(longest, current);
  }
  return longest;
}

/** Resolves at an absolute time: a lease's end is written in the khstate, so this is no guess. */
function until(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now()) + 50));
}

interface Stressed {
  check: string;
  /** When the stressed invocation started (ISO, comparable with audit timestamps). */
  from: string;
  exit: RunnerExit;
  otherWrites: number;
  /** The exit of the invocation after the writer stopped, when the stressed one could not record. */
  recovery?: RunnerExit;
}

/**
 * Runs each check once quietly (so its khstate exists), then again with the other writer going, and,
 * when that invocation gave up on conflicts (exit 1, run left in the khstate), once more after the
 * writer stopped, as the next CronJob run would.
 */
async function stressed(checks: string[], pauseMs: number): Promise<Stressed[]> {
  return Promise.all(
    checks.map(async (check) => {
      await createCheck(kc, ns, check, { containers: [checkerContainer({ delayMs: 1500 })] });
      const first = startRunner(check, ns);
      runners.push(first);
      expect(resultOf(await first.done)).toMatchObject({ result: 'recorded', kind: 'Succeeded' });

      const stop = new AbortController();
      const from = new Date().toISOString();
      const runner = startRunner(check, ns, { KHRUN_LEASE_SECONDS: '2', POWERTOOLS_LOG_LEVEL: 'DEBUG' });
      runners.push(runner);
      const writing = otherWriter(check, stop.signal, pauseMs);
      const exit = await runner.done;
      stop.abort();
      const otherWrites = await writing;
      if (exit.code === 0) return { check, from, exit, otherWrites };
      const left = readActiveRun(await readState(kc, ns, check));
      if (left) await until(left.leaseUntilMs);
      const next = startRunner(check, ns);
      runners.push(next);
      return { check, from, exit, otherWrites, recovery: await next.done };
    }),
  );
}

/** Checks every run's end state and sums up what the audit log says about the runner's writes. */
async function assess(results: Stressed[]) {
  const events = (await auditEvents(kc, ns)).filter(
    (e) => e.objectRef?.resource === KHSTATE_PLURAL && e.verb === 'update',
  );
  const problems: string[] = [];
  const sum = { conflicts: 0, updates: 0, longest: 0, reportAttempts: 0, otherWrites: 0, gaveUp: 0, lost: 0 };
  for (const { check, from, exit, otherWrites, recovery } of results) {
    sum.otherWrites += otherWrites;
    const final = recovery ?? exit;
    const result = resultOf(final);
    const state = await readState(kc, ns, check);
    if (recovery) {
      sum.gaveUp++;
      // Giving up is allowed only the bounded way: exit 1 after the conflict limit, run left to adopt.
      if (exit.code !== 1 || !/write conflicts in a row/.test(exit.stdout + exit.stderr))
        problems.push(
          `${check}: the stressed run ended with exit ${exit.code}:\n${exit.stderr.slice(-1500)}`,
        );
    }
    if (final.code !== 0 || result?.kind !== 'Succeeded') {
      sum.lost++;
      problems.push(`${check}: exit ${final.code}, ${JSON.stringify(result)}\n${final.stderr.slice(-1500)}`);
    }
    problems.push(...stateProblems(state, ns).map((p) => `${check}: ${p}`));
    if (readAcceptedReport(state)?.uuid !== state?.spec.uuid || readLastOutcome(state)?.kind !== 'Succeeded')
      problems.push(`${check}: the accepted report is not the recorded outcome`);
    if (recordedOutcomes(state) !== 2)
      problems.push(`${check}: ${recordedOutcomes(state)} outcomes recorded`);
    if (state?.metadata.annotations?.[NOISE] !== String(otherWrites))
      problems.push(`${check}: the other writer's last write (${otherWrites}) is not in the khstate`);
    const mine = events.filter((e) => e.objectRef?.name === check && e.stageTimestamp >= from);
    sum.conflicts += mine.filter((e) => e.responseStatus?.code === 409).length;
    sum.updates += mine.length;
    sum.longest = Math.max(sum.longest, longestConflictRun(mine));
    const accepted = logLines(`${exit.stdout}${exit.stderr}`).find((l) => l.message === 'report accepted');
    sum.reportAttempts = Math.max(sum.reportAttempts, Number(accepted?.attempt ?? 0));
  }
  expect(problems).toEqual([]);
  expect(sum.conflicts, 'the other writer did make the runner conflict').toBeGreaterThan(0);
  expect(sum.longest, 'no write retried past its bound').toBeLessThanOrEqual(MAX_ATTEMPTS);
  return sum;
}

describe('another writer on the khstate while the runner and the report endpoint write', () => {
  it('a busy writer (one patch every 50 ms per khstate): every run records its report, nothing lost', async () => {
    const s = await assess(await stressed(['busy-a', 'busy-b', 'busy-c', 'busy-d'], 50));
    expect(s.gaveUp).toBe(0);
    await recordFault({
      fault: 'conflicts: another writer patches each khstate every 50 ms during the runs (4 checks at once)',
      runs: 4,
      outcome: `${s.otherWrites} other writes; ${s.conflicts} of the runner's and endpoint's ${s.updates} khstate updates conflicted (409) and were retried, at most ${s.longest} in a row (bound ${MAX_ATTEMPTS}), the report stored at attempt ≤ ${s.reportAttempts}; every report recorded by its run, the other writer's last write kept`,
      lost: s.lost,
    });
  }, 180_000);

  it('a hammering writer (patches back to back): retries stay bounded, and nothing is lost', async () => {
    const s = await assess(await stressed(['hammer-a', 'hammer-b', 'hammer-c', 'hammer-d'], 0));
    await recordFault({
      fault:
        'conflicts: another writer patches each khstate back to back, as fast as the API answers (4 checks at once)',
      runs: 4,
      outcome: `${s.otherWrites} other writes; ${s.conflicts} of ${s.updates} khstate updates conflicted, at most ${s.longest} in a row (bound ${MAX_ATTEMPTS}); ${s.gaveUp === 0 ? 'all 4 runs recorded under fire' : `${4 - s.gaveUp} runs recorded under fire, ${s.gaveUp} gave up after ${MAX_ATTEMPTS} conflicts in a row (exit 1, run left in the khstate) and the next invocation recorded it`}; every report kept, the other writer's last write kept`,
      lost: s.lost,
    });
  }, 180_000);
});
