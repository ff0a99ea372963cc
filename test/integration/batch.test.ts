import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ActiveRun, readActiveRun, readLastOutcome } from '../../lib/state/khstate.ts';
import { auditEvents } from './faults/helpers/audit.ts';
import { checkerContainer, type Gate, startGate } from './faults/helpers/checker.ts';
import {
  checkPods,
  isRunning,
  noLivePods,
  podEnv,
  recordedOutcomes,
  stateProblems,
  waitForCheckPod,
} from './faults/helpers/invariants.ts';
import {
  logLines,
  type RunnerExit,
  resultOf,
  startRunner,
  stopRunner,
} from './faults/helpers/khrun-process.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { createCheck, type KhrunResult, nodeContainer, readState, startKhrun } from './helpers/khrun.ts';

// Batch runs (issue 15): one `khrun run` process drives many khchecks at once, each a full iteration with
// its own claim, pod, deadline and outcome, behind one report endpoint. One check's fault (a hung pod, an
// invalid spec, a missing khcheck) is its own entry; a batch SIGKILLed midway is finished check by check
// by the next invocations, single or batched, one outcome per run.

const kc = adminKubeConfig();
let ns: string;
let gate: Gate;
const children: Array<{ child: import('node:child_process').ChildProcess; done: Promise<unknown> }> = [];
const LEASE = { KHRUN_LEASE_SECONDS: '2' };

beforeAll(async () => {
  ns = await freshNamespace(kc, 'batch');
  gate = await startGate(inject('hostIp'));
});
afterAll(async () => {
  for (const c of children)
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.done.catch(() => undefined)));
  await gate?.close();
  await dropNamespace(kc, ns);
});

/** `khrun run --check A --check B ... -n NS -o json`, the real entrypoint in a process of its own. */
function startBatch(checks: string[], env: Record<string, string> = {}) {
  const run = startKhrun(
    [...checks.flatMap((c) => ['--check', c]), '--namespace', ns, '--output', 'json'],
    env,
  );
  children.push(run);
  return run;
}

/** The batch's entries: one JSON object per line per check (log lines carry a level and are skipped). */
function entriesOf(result: KhrunResult): Array<Record<string, unknown>> {
  return result.stdout
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"result"') && !l.includes('"level"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const origin = (pod: V1Pod) => new URL(podEnv(pod, 'KH_REPORTING_URL') ?? 'missing:').origin;

describe('a batch run', () => {
  it('gives each check its own outcome: two report, one fails, one hangs to its timeout, one is invalid, one is missing', async () => {
    await Promise.all([
      createCheck(kc, ns, 'ok-1', { containers: [checkerContainer()] }),
      createCheck(kc, ns, 'ok-2', { containers: [checkerContainer()] }),
      createCheck(kc, ns, 'fails', { containers: [checkerContainer({ ok: false, errors: ['disk full'] })] }),
      createCheck(
        kc,
        ns,
        'hangs',
        { containers: [nodeContainer('setInterval(() => {}, 1000)')] },
        { timeout: '10s' },
      ),
      createCheck(kc, ns, 'invalid', { containers: [nodeContainer('0')] }, { timeout: '5 min' }),
    ]);
    const names = ['ok-1', 'hangs', 'invalid', 'missing', 'fails', 'ok-2'];
    const run = startBatch(names);
    // The hung pod is removed at its deadline: its reporting URL is read as soon as it exists (10 s, not
    // less: on a loaded machine a shorter deadline can pass before the pod is created, and no pod is made).
    const hung = await waitForCheckPod(kc, ns, 'hangs', () => true, 'created');
    const result = await run.done;
    const diagnostics = `${result.stdout.slice(-4000)}\n${result.stderr.slice(-2000)}`;

    // A missing khcheck is exit 2, as `khrun run --check missing` alone; nothing could not finish (1).
    expect(result.code, diagnostics).toBe(2);
    const entries = entriesOf(result);
    expect(
      entries.map((e) => e.check),
      diagnostics,
    ).toEqual(names.map((n) => `${ns}/${n}`));
    const [ok1, hangs, invalid, missing, fails, ok2] = entries;
    expect(ok1).toMatchObject({ result: 'recorded', kind: 'Succeeded', ok: true, adopted: false });
    expect(ok2).toMatchObject({ result: 'recorded', kind: 'Succeeded', ok: true, adopted: false });
    expect(fails).toMatchObject({ result: 'recorded', kind: 'Failed', ok: false, errors: ['disk full'] });
    expect(hangs).toMatchObject({ result: 'recorded', kind: 'TimedOut', ok: false });
    expect(invalid).toMatchObject({ result: 'recorded', kind: 'ExecutionError', ok: false });
    expect(String(invalid?.errors)).toMatch(/spec.timeout "5 min"/);
    expect(missing).toMatchObject({
      result: 'not-found',
      reason: expect.stringMatching(/missing not found/),
    });

    for (const name of ['ok-1', 'ok-2', 'fails', 'hangs', 'invalid']) {
      const state = await readState(kc, ns, name);
      expect(stateProblems(state, ns), name).toEqual([]);
      expect(recordedOutcomes(state), name).toBe(1);
    }
    expect(await readState(kc, ns, 'missing')).toBeNull();

    // Every pod is finished or gone (the hung one removed at its deadline); one endpoint served them all.
    // The process kubelet's removal of the deleted pod took over 30 s at a CI load average of 12.
    const pods = (
      await Promise.all(
        ['ok-1', 'ok-2', 'fails', 'hangs', 'invalid'].map((c) => noLivePods(kc, ns, c, 90_000)),
      )
    ).flat();
    expect(await checkPods(kc, ns, 'hangs')).toEqual([]);
    expect(pods).toHaveLength(3);
    expect(new Set([...pods, hung].map(origin))).toEqual(new Set([origin(hung)]));
    // Each check's log lines name it: the process's lines are told apart by check.
    const logs = logLines(result.stdout + result.stderr);
    for (const name of ['ok-1', 'fails', 'hangs'])
      expect(
        logs.some((l) => l.check === name),
        name,
      ).toBe(true);
    expect(logs.find((l) => l.message === 'batch finished')).toMatchObject({
      checks: 6,
      results: { recorded: 5, 'not-found': 1 },
    });
  }, 240_000);

  it("reads its namespace's khchecks, khstates and checker pods once for the whole batch (the audit log)", async () => {
    const own = await freshNamespace(kc, 'batch-reads');
    try {
      const names = Array.from({ length: 6 }, (_, i) => `c${i}`);
      await Promise.all(names.map((n) => createCheck(kc, own, n, { containers: [checkerContainer()] })));
      const startedAt = new Date().toISOString();
      const run = startKhrun(
        [...names.flatMap((c) => ['--check', c]), '--namespace', own, '--output', 'json'],
        {},
      );
      children.push(run);
      const result = await run.done;
      const endedAt = new Date().toISOString();
      const diagnostics = `${result.stdout.slice(-3000)}\n${result.stderr.slice(-2000)}`;
      expect(result.code, diagnostics).toBe(0);
      expect(entriesOf(result).map((e) => e.result)).toEqual(names.map(() => 'recorded'));
      // The batch's requests in its namespace: those of its user (the admin's, as the marker request's) the
      // API server received while it ran (the test sent none meanwhile), each once (a watch logs two stages).
      const events = await auditEvents(kc, own);
      const admin = events.find((e) => e.objectRef?.name?.startsWith('audit-marker-'))?.user?.username;
      const during = events.filter(
        (e) =>
          e.user?.username === admin &&
          e.stage === (e.verb === 'watch' ? 'ResponseStarted' : 'ResponseComplete') &&
          e.requestReceivedTimestamp >= startedAt &&
          e.requestReceivedTimestamp <= endedAt,
      );
      const count = (verb: string, resource: string) =>
        during.filter(
          (e) => e.verb === verb && e.objectRef?.resource === resource && !e.objectRef.subresource,
        ).length;
      const seen = JSON.stringify(during.map((e) => `${e.verb} ${e.objectRef?.resource}`));
      // One list of each for six checks, where each run alone gets its khcheck and khstate and lists its pods.
      expect(
        {
          'list khchecks': count('list', 'khchecks'),
          'get khchecks': count('get', 'khchecks'),
          'list khstates': count('list', 'khstates'),
          'get khstates': count('get', 'khstates'),
          'list pods': count('list', 'pods'),
          'watch pods': count('watch', 'pods'),
          'create pods': count('create', 'pods'),
          'create khstates': count('create', 'khstates'),
          'update khstates': count('update', 'khstates'),
        },
        seen,
      ).toEqual({
        'list khchecks': 1,
        'get khchecks': 0,
        'list khstates': 1,
        'get khstates': 0,
        'list pods': 1,
        'watch pods': 1,
        'create pods': 6,
        // Each run's claim created its khstate (these checks never ran); its record is one update.
        'create khstates': 6,
        'update khstates': 6,
      });
    } finally {
      await dropNamespace(kc, own);
    }
  });

  it('SIGKILLed midway, each of its runs is adopted and closed by the next invocations, single or batched', async () => {
    const names = ['kill-1', 'kill-2', 'kill-3'];
    await Promise.all(
      names.map((n) =>
        createCheck(kc, ns, n, { containers: [checkerContainer({ gateUrl: gate.waitUrl(n) })] }),
      ),
    );
    const batch = startBatch(names, LEASE);
    // Each run is claimed and its pod waits at the gate: the batch is midway for all three.
    await Promise.all(names.map((n) => waitForCheckPod(kc, ns, n, isRunning, 'waiting at the gate')));
    batch.child.kill('SIGKILL');
    const killed = await batch.done;
    expect(killed.code).toBeNull();
    expect(entriesOf(killed)).toEqual([]);
    const orphans = new Map<string, ActiveRun>();
    for (const n of names) {
      const orphan = readActiveRun(await readState(kc, ns, n));
      expect(orphan, `${n}: the killed run is left in its khstate`).toBeDefined();
      orphans.set(n, orphan!);
    }
    for (const n of names) gate.open(n);
    await until(Math.max(...[...orphans.values()].map((o) => o.leaseUntilMs)));

    // kill-1 alone, as its CronJob would; kill-2 and kill-3 in another batch, concurrently.
    const [single, again] = await Promise.all([recover(['kill-1']), recover(['kill-2', 'kill-3'])]);
    for (const entry of [...single, ...again])
      expect(entry, JSON.stringify(entry)).toMatchObject({
        result: 'recorded',
        kind: 'Succeeded',
        adopted: true,
      });
    for (const n of names) {
      const state = await readState(kc, ns, n);
      expect(stateProblems(state, ns), n).toEqual([]);
      expect(state?.spec.uuid, `${n}: the killed run is the one recorded`).toBe(orphans.get(n)?.uuid);
      expect(readLastOutcome(state)?.uuid).toBe(orphans.get(n)?.uuid);
      expect(recordedOutcomes(state), n).toBe(1);
      await noLivePods(kc, ns, n);
    }
  });
});

/** Resolves at an absolute time: a lease's end is written in the khstate, so this is no guess. */
function until(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now()) + 50));
}

/**
 * Runs the checks (one: `khrun run --check`; more: a batch) until none is busy; each busy one is run again.
 * Bounded: 5 rounds. Returns each check's entry.
 */
async function recover(checks: string[]): Promise<Array<Record<string, unknown>>> {
  const done = new Map<string, Record<string, unknown>>();
  const exits: string[] = [];
  for (let round = 0; round < 5 && done.size < checks.length; round++) {
    const left = checks.filter((c) => !done.has(c));
    const entries =
      left.length === 1 ? [await single(left[0]!)] : entriesOf(await startBatch(left, LEASE).done);
    exits.push(JSON.stringify(entries));
    for (const e of entries) if (e.result !== 'busy') done.set(String(e.check).split('/')[1]!, e);
  }
  if (done.size < checks.length) throw new Error(`not recovered: ${exits.join('\n')}`);
  return checks.map((c) => done.get(c)!);
}

async function single(check: string): Promise<Record<string, unknown>> {
  const runner = startRunner(check, ns, LEASE);
  let exit: RunnerExit;
  try {
    exit = await runner.done;
  } finally {
    await stopRunner(runner);
  }
  const result = resultOf(exit);
  if (!result) throw new Error(`no result from ${check}: ${exit.stdout.slice(-2000)}`);
  return result;
}
