import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, type V1Container } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState, repoRoot } from '../helpers/khrun.ts';
import { checkerContainer, type Gate, startGate } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms } from './helpers/fault-table.ts';
import {
  checkPods,
  isRunning,
  recordedOutcomes,
  stateProblems,
  waitForCheckPod,
} from './helpers/invariants.ts';
import {
  logLines,
  type Runner,
  type RunnerExit,
  resultOf,
  startRunner,
  stopRunner,
} from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Clocks: runners, a report server and ticks whose clocks are 5 minutes ahead of or behind the API
// server's (a Node preload that moves Date.now, real processes), next to runners on the API server's clock (this machine's: the
// local cluster runs here). Leases, deadlines, the report deadline and due times are written by one
// process and judged by another; every judgement must come out as it would with one clock.

/** The preload that moves a Node process's wall clock by KHRUN_TEST_CLOCK_SKEW_MS (helpers/skew-clock.mjs). */
const SKEW_PRELOAD = pathToFileURL(join(import.meta.dirname, 'helpers/skew-clock.mjs')).href;
const FIVE_MINUTES_MS = 5 * 60_000;
type Skew = '+5m' | '-5m';
/** Only the wall clock moves: the monotonic clock (timers, intervals) stays true, as on a real machine. */
const skewed = (skew: Skew) => ({
  NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${SKEW_PRELOAD}`].filter(Boolean).join(' '),
  KHRUN_TEST_CLOCK_SKEW_MS: String(skew === '+5m' ? FIVE_MINUTES_MS : -FIVE_MINUTES_MS),
});

const kc = adminKubeConfig();
let ns: string;
let tickNs: string;
let gate: Gate;
let tally: ReportTally;
const started: Runner[] = [];
const servers: ChildProcess[] = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-clock');
  tickNs = await freshNamespace(kc, 'f-clock-tick');
  gate = await startGate(inject('hostIp'));
  tally = await startReportTally(kc, inject('hostIp'));
});
afterAll(async () => {
  for (const r of started) await stopRunner(r);
  for (const s of servers) s.kill('SIGKILL');
  await gate?.close();
  await tally?.close();
  await dropNamespace(kc, ns);
  await dropNamespace(kc, tickNs);
});

function run(check: string, env: Record<string, string>, namespace = ns): Runner {
  const runner = startRunner(check, namespace, env);
  started.push(runner);
  return runner;
}

/** Resolves at an absolute time read from a khstate (written in the API server's time, which is ours). */
function until(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now())));
}

const why = (exit: RunnerExit) => `${exit.stdout.slice(-3000)}\n${exit.stderr.slice(-2000)}`;

/** The skew a runner 5 min off measured and warned about (its warning's skewMs: local minus the API server's). */
function skewOf(runner: Runner): number {
  const warning = logLines(runner.output()).find((l) => typeof l.skewMs === 'number');
  return Number(warning?.skewMs);
}

/** The expected skew's sign and size, within 2 s (the measurement's resolution and the machine's load). */
function expectSkew(skewMs: number, skew: Skew) {
  const expectedMs = skew === '+5m' ? FIVE_MINUTES_MS : -FIVE_MINUTES_MS;
  expect(Math.abs(skewMs - expectedMs), `the skew warning of a runner at ${skew}`).toBeLessThan(2_000);
}

const seconds = (v: number) => `${v >= 0 ? '+' : '−'}${(Math.abs(v) / 1000).toFixed(1)} s`;

/** The runs of checks whose checker reported (tally), and how many of them the khstates hold recorded. */
async function countRuns(checks: Array<{ namespace: string; name: string }>) {
  const reported: string[] = [];
  const recordedRuns: Array<string | undefined> = [];
  for (const c of checks) {
    reported.push(...tally.runs(c.name));
    recordedRuns.push(readLastOutcome(await readState(kc, c.namespace, c.name))?.uuid);
  }
  return { reported: reported.length, recorded: recordedOf(reported, recordedRuns) };
}

const TAKEOVER = /"message":"(adopted run|closed stale run)"/;

/**
 * What a runner decided about a run it met: 'adopted run' or 'closed stale run' as soon as it logs either
 * (so a takeover fails the test at once, not after the taken run's deadline), else its result once it exits.
 */
function decided(runner: Runner): Promise<string> {
  return new Promise((resolve) => {
    const look = () => {
      const m = TAKEOVER.exec(runner.output());
      if (m) resolve(m[1] ?? '');
    };
    runner.child.stdout?.on('data', look);
    runner.child.stderr?.on('data', look);
    void runner.done.then((exit) => resolve(String(resultOf(exit)?.result ?? `exit ${exit.code}`)));
  });
}

async function gatedCheck(name: string, timeout: string): Promise<void> {
  await createCheck(
    kc,
    ns,
    name,
    { containers: [checkerContainer({ gateUrl: gate.waitUrl(name), notifyUrl: tally.url(name) })] },
    { timeout },
  );
}

describe('clocks 5 minutes apart', () => {
  it('the clock preload moves a process clock by 5 minutes either way', async () => {
    for (const skew of ['+5m', '-5m'] as const) {
      const before = Date.now();
      const { stdout } = await promisify(execFile)(process.execPath, ['-e', 'console.log(Date.now())'], {
        env: { ...process.env, ...skewed(skew) },
      });
      const offsetMs = Number(stdout.trim()) - before;
      expect(Math.abs(offsetMs - (skew === '+5m' ? FIVE_MINUTES_MS : -FIVE_MINUTES_MS))).toBeLessThan(10_000);
    }
  });

  it.concurrent('a runner 5 min ahead meets a live run: it neither closes nor adopts it and removes no pod', async (test) => {
    const fault = 'clock: a runner 5 min ahead (a Node clock preload) meets a live run held by one on time';
    const row = faultScenario(fault, test);
    const check = 'ahead-meets-live';
    await gatedCheck(check, '60s');
    const owner = run(check, { POD_NAME: 'owner-a' });
    const pod = await waitForCheckPod(kc, ns, check, isRunning, "the owner's checker pod running");
    const aheadRunner = run(check, { ...skewed('+5m'), POD_NAME: 'ahead-a' });
    const aheadDecided = await decided(aheadRunner);
    const ahead = await aheadRunner.done;
    const skewMs = skewOf(aheadRunner);
    const pods = await checkPods(kc, ns, check);
    const holder = readActiveRun(await readState(kc, ns, check))?.runner;
    gate.open(check);
    const exit = await owner.done;
    const state = await readState(kc, ns, check);
    await row.record({
      fault,
      runs: 2,
      outcome: `the runner ahead measured its skew against the API server as ${seconds(skewMs)} and exited ${aheadDecided} (exit ${ahead.code}); ${pods.filter((p) => p.metadata?.deletionTimestamp).length} pods removed, run still held by ${holder}; the owner's run ${readLastOutcome(state)?.kind}`,
      ...(await countRuns([{ namespace: ns, name: check }])),
    });

    expect(aheadDecided, aheadRunner.output()).toBe('busy');
    expectSkew(skewMs, '+5m');
    expect(ahead.code, why(ahead)).toBe(0);
    expect(pods.map((p) => [p.metadata?.name, Boolean(p.metadata?.deletionTimestamp)])).toEqual([
      [pod.metadata?.name, false],
    ]);
    expect(holder).toBe('owner-a');
    expect(resultOf(exit), why(exit)).toMatchObject({
      result: 'recorded',
      kind: 'Succeeded',
      adopted: false,
    });
    expect(stateProblems(state, ns)).toEqual([]);
    expect(recordedOutcomes(state)).toBe(1);
  });

  it.concurrent('a runner 5 min behind holds a live run: a runner on time leaves it; its times are the API server’s', async (test) => {
    const fault = 'clock: a runner 5 min behind holds a live run; a runner on time meets it';
    const row = faultScenario(fault, test);
    const check = 'behind-holds-live';
    await gatedCheck(check, '10m');
    const startedMs = Date.now();
    const owner = run(check, { ...skewed('-5m'), POD_NAME: 'behind-b' });
    const pod = await waitForCheckPod(kc, ns, check, isRunning, "the owner's checker pod running");
    const other = run(check, { POD_NAME: 'other-b' });
    const otherDecided = await decided(other);
    const pods = await checkPods(kc, ns, check);
    gate.open(check);
    const exit = await owner.done;
    const skewMs = skewOf(owner);
    const endedMs = Date.now();
    const state = await readState(kc, ns, check);
    // v2 readers take LastRun as the time of the run: it is written in the API server's time.
    const lastRunMs = Date.parse(String(state?.spec.LastRun));
    const last = readLastOutcome(state);
    await row.record({
      fault,
      runs: 2,
      outcome: `the runner behind measured its skew as ${seconds(skewMs)}; the runner on time exited ${otherDecided}, ${pods.filter((p) => p.metadata?.deletionTimestamp).length} pods removed; the run ${last?.kind}, its LastRun ${seconds(lastRunMs - startedMs)} after the test started it (the API server's time, not the runner's)`,
      ...(await countRuns([{ namespace: ns, name: check }])),
    });

    expect(otherDecided, other.output()).toBe('busy');
    expect(pods.map((p) => [p.metadata?.name, Boolean(p.metadata?.deletionTimestamp)])).toEqual([
      [pod.metadata?.name, false],
    ]);
    expectSkew(skewMs, '-5m');
    expect(resultOf(exit), why(exit)).toMatchObject({
      result: 'recorded',
      kind: 'Succeeded',
      adopted: false,
    });
    expect(stateProblems(state, ns)).toEqual([]);
    expect(lastRunMs).toBeGreaterThanOrEqual(Math.floor(startedMs / 1000) * 1000 - 2_000);
    expect(lastRunMs).toBeLessThanOrEqual(endedMs + 2_000);
    expect(last?.startedAtMs).toBeGreaterThanOrEqual(startedMs - 2_000);
    expect(last?.finishedAtMs).toBeLessThanOrEqual(endedMs + 2_000);
  });

  it.concurrent('a dead run: a runner 5 min ahead waits for its lease, one 5 min behind adopts it once it lapsed', async (test) => {
    const fault =
      'clock: a dead run met by a runner 5 min ahead (lease holding) and one 5 min behind (lease lapsed)';
    const row = faultScenario(fault, test);
    const check = 'dead-run';
    await createCheck(
      kc,
      ns,
      check,
      { containers: [checkerContainer({ delayMs: 500, notifyUrl: tally.url(check) })] },
      { timeout: '10m' },
    );
    const killed = await run(check, { KHRUN_FAILPOINT_KILL_AT: 'claimed', KHRUN_LEASE_SECONDS: '20' }).done;
    const orphan = readActiveRun(await readState(kc, ns, check));
    if (!orphan) throw new Error(`the killed run is not in the khstate: ${why(killed)}`);

    const ahead = run(check, { ...skewed('+5m'), POD_NAME: 'ahead-c' });
    const aheadDecided = await decided(ahead);
    const aheadDecidedAtMs = Date.now();
    await ahead.done;
    const aheadSkewMs = skewOf(ahead);
    const podsAfterAhead = await checkPods(kc, ns, check);

    await until(orphan.leaseUntilMs + 1_500);
    const behindStartMs = Date.now();
    const behindRunner = run(check, { ...skewed('-5m'), POD_NAME: 'behind-c' });
    const behind = await behindRunner.done;
    const behindSkewMs = skewOf(behindRunner);
    const state = await readState(kc, ns, check);
    await row.record({
      fault,
      runs: 3,
      outcome: `the runner ahead (skew ${seconds(aheadSkewMs)}) decided ${aheadDecided} ${ms(orphan.leaseUntilMs - aheadDecidedAtMs)} before the lease lapsed and created ${podsAfterAhead.length} pods; the runner behind (skew ${seconds(behindSkewMs)}), started ${ms(behindStartMs - orphan.leaseUntilMs)} after it lapsed, ${String(resultOf(behind)?.result)} ${String(resultOf(behind)?.kind)} (adopted: ${String(resultOf(behind)?.adopted)})`,
      ...(await countRuns([{ namespace: ns, name: check }])),
    });

    expect(killed.signal, why(killed)).toBe('SIGKILL');
    expect(aheadDecidedAtMs, 'the runner 5 min ahead decided while the lease held').toBeLessThan(
      orphan.leaseUntilMs,
    );
    expect(aheadDecided, ahead.output()).toBe('busy');
    expectSkew(aheadSkewMs, '+5m');
    expect(podsAfterAhead).toEqual([]);
    expectSkew(behindSkewMs, '-5m');
    expect(resultOf(behind), why(behind)).toMatchObject({
      result: 'recorded',
      kind: 'Succeeded',
      adopted: true,
    });
    expect(state?.spec.uuid, 'the dead run is the one recorded').toBe(orphan.uuid);
    expect(stateProblems(state, ns)).toEqual([]);
    expect(recordedOutcomes(state)).toBe(1);
  });

  it.concurrent('a report server 5 min ahead takes a report that arrives before the deadline', async (test) => {
    const fault = 'clock: a report server (`khrun serve`) 5 min ahead takes a report before the deadline';
    const row = faultScenario(fault, test);
    const check = 'report-to-ahead-server';
    await createCheck(
      kc,
      ns,
      check,
      { containers: [checkerContainer({ delayMs: 500, notifyUrl: tally.url(check) })] },
      { timeout: '60s' },
    );
    const base = await startServe(skewed('+5m'));
    const exit = await run(check, {
      KH_EXTERNAL_REPORTING_URL: `${base}/externalCheckStatus`,
      POD_NAME: 'owner-d',
    }).done;
    const state = await readState(kc, ns, check);
    await row.record({
      fault,
      runs: 1,
      outcome: `the run ${String(resultOf(exit)?.result)} ${readLastOutcome(state)?.kind}, its report taken by the server ahead`,
      ...(await countRuns([{ namespace: ns, name: check }])),
    });

    expect(resultOf(exit), why(exit)).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(stateProblems(state, ns)).toEqual([]);
  });

  it.concurrent('ticks 5 min off dispatch a check exactly when it is due', {
    timeout: 240_000,
  }, async (test) => {
    const fault = 'clock: ticks 5 min ahead and 5 min behind decide when a check is due';
    const row = faultScenario(fault, test);
    await createTrivialRunnerTemplate();
    // A check that never ran is due at its creation (no jitter): a tick 5 min behind dispatches it at once.
    await createCheck(kc, tickNs, 'tick-first', { containers: [quickContainer()] }, { runInterval: '10m' });
    const first = await tick(skewed('-5m'));

    // A check that ran: due 30 s after that run's start (its 40 s interval less a quarter).
    const check = 'tick-interval';
    await createCheck(
      kc,
      tickNs,
      check,
      { containers: [checkerContainer({ notifyUrl: tally.url(check) })] },
      { runInterval: '40s', timeout: '20s' },
    );
    const ran = await run(check, { POD_NAME: 'manual-e' }, tickNs).done;
    const lastStartMs = readLastOutcome(await readState(kc, tickNs, check))?.startedAtMs ?? Number.NaN;
    const dueMs = lastStartMs + 30_000;

    const early = await tick(skewed('+5m'));
    const earlyLookedAtMs = Date.now();
    await until(dueMs + 1_000);
    const lateMs = Date.now() - dueMs;
    const onTime = await tick(skewed('-5m'));
    const said = (t: TickRun, c: string) => {
      const e = t.entry(c) as { result?: string; decision?: { reason?: string } } | undefined;
      return e ? `${e.result} (${e.decision?.reason})` : 'no entry';
    };
    await row.record({
      fault,
      runs: 3,
      outcome: `a never-run check, tick 5 min behind: ${said(first, 'tick-first')}; a check due 30 s after its last start, tick 5 min ahead ${ms(dueMs - earlyLookedAtMs)} before it: ${said(early, check)}; tick 5 min behind started ${ms(lateMs)} after it: ${said(onTime, check)}`,
      ...(await countRuns([{ namespace: tickNs, name: check }])),
    });

    expect(first.entry('tick-first'), first.output).toMatchObject({
      result: 'dispatched',
      decision: { reason: 'never-run' },
    });
    expect(resultOf(ran), why(ran)).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(earlyLookedAtMs, 'the tick 5 min ahead looked before the check was due').toBeLessThan(dueMs);
    expect(early.entry(check), early.output).toMatchObject({
      result: 'not-due',
      decision: { reason: 'not-yet', nextCheckMs: dueMs },
    });
    expect(onTime.entry(check), onTime.output).toMatchObject({
      result: 'dispatched',
      decision: { reason: 'interval-passed' },
    });
  });
});

/** `khrun serve` for the test namespace with the given clock; resolves with its base URL once it listens. */
async function startServe(env: Record<string, string>): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'functions/khrun.mjs'),
      'serve',
      '--host',
      inject('hostIp'),
      '--port',
      '0',
      '--namespaces',
      ns,
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: inject('kubeconfigPath'),
        POWERTOOLS_LOG_LEVEL: 'INFO',
        // The runner's pod reports unsigned, by its kh-run-uuid header.
        KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  servers.push(child);
  let out = '';
  return new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      out += c;
      const m = /reports at (http:\/\/\S+)\/externalCheckStatus/.exec(out);
      if (m) resolve(m[1] ?? '');
    });
    child.stderr?.on('data', (c: Buffer) => {
      out += c;
    });
    child.once('exit', (code) => reject(new Error(`khrun serve exited (${code}) before listening:\n${out}`)));
  });
}

const quickContainer = (): V1Container => ({
  name: 'check',
  image: 'node:20-alpine',
  command: [process.execPath, '-e', '0'],
});

/** Dispatched Jobs only need to exist: their runner pod exits at once. */
async function createTrivialRunnerTemplate(): Promise<void> {
  await kc.makeApiClient(CoreV1Api).createNamespacedPodTemplate({
    namespace: tickNs,
    body: {
      metadata: { name: 'clock-runner' },
      template: { spec: { restartPolicy: 'Never', containers: [quickContainer()] } },
    },
  });
}

interface TickRun {
  output: string;
  entry(check: string): Record<string, unknown> | undefined;
}

/** One `khrun tick` over the tick namespace with the given clock, dispatching Jobs from the template. */
async function tick(env: Record<string, string>): Promise<TickRun> {
  const args = [
    join(repoRoot, 'functions/khrun.mjs'),
    'tick',
    '--namespaces',
    tickNs,
    '--job-namespace',
    tickNs,
    '--pod-template',
    'clock-runner',
    '--first-run-jitter',
    '0s',
    '-o',
    'json',
  ];
  const result = await promisify(execFile)(process.execPath, args, {
    env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), POWERTOOLS_LOG_LEVEL: 'WARN', ...env },
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => ({
    stdout: error.stdout ?? '',
    stderr: `${error.stderr ?? ''}\n${error.message}`,
  }));
  const output = `${result.stdout}\n${result.stderr}`;
  const doc = result.stdout.trim().split('\n').pop() ?? '{}';
  const entries = (JSON.parse(doc.startsWith('{') ? doc : '{}') as { entries?: Array<{ check: string }> })
    .entries;
  return { output, entry: (check) => entries?.find((e) => e.check === `${tickNs}/${check}`) };
}
