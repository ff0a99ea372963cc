import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { emptyTotals } from '../../lib/state/totals.ts';
import { faultRows, renderFaultTable } from '../faults/render.ts';
import { FAULTS_OUT_ENV, type FaultLine } from '../integration/faults/helpers/fault-table.ts';
import { isLiveKill, KILL_POINTS, killPoint } from '../integration/faults/helpers/kill-point.ts';
import { recordedOf } from '../integration/faults/helpers/report-tally.ts';

// The faults table can show a loss: rows are measured and written before their scenario asserts, lost is
// computed from them, and a scenario whose test failed is marked so, or stands in with ? when it failed
// before it measured anything.

const root = resolve(import.meta.dirname, '../..');
const lines = (...l: FaultLine[]) => l.map((x) => JSON.stringify(x)).join('\n');

describe('the faults table', () => {
  it('computes lost from what was reported and recorded, and marks a failed scenario', () => {
    const rows = faultRows(
      lines(
        {
          id: 'a',
          fault: 'crash: a kill',
          runs: 10,
          outcome: '9 of 10 finished',
          reported: 12,
          recorded: 11,
        },
        { id: 'b', fault: 'overlap: ten at once', runs: 10, outcome: '1 pod', reported: 1, recorded: 1 },
        { id: 'a', scenario: 'crash: a kill', failed: 'expected 11 to be 12' },
        { id: 'c', scenario: 'exit: a silent exit', failed: 'the runner never exited' },
      ),
    );
    const table = renderFaultTable(rows);
    expect(table.slice(2)).toEqual([
      '| overlap: ten at once | 10 | 1 pod | 1 | 1 | 0 |',
      '| crash: a kill | 10 | **FAILED: expected 11 to be 12**; 9 of 10 finished | 12 | 11 | **1** |',
      '| exit: a silent exit | ? | **FAILED: the runner never exited** (before it measured anything) | ? | ? | ? |',
    ]);
  });

  it('orders rows by area, then rank, then as written', () => {
    const rows = faultRows(
      lines(
        { fault: 'crash: random', runs: 1, outcome: '', reported: 0, recorded: 0, rank: 9 },
        { fault: 'crash: claimed', runs: 1, outcome: '', reported: 0, recorded: 0, rank: 0 },
        { fault: 'fuzz: parser', runs: 1, outcome: '', reported: 0, recorded: 0 },
        { fault: 'overlap: ten', runs: 1, outcome: '', reported: 0, recorded: 0 },
      ),
    );
    expect(rows.map((r) => r.fault)).toEqual([
      'overlap: ten',
      'crash: claimed',
      'crash: random',
      'fuzz: parser',
    ]);
  });

  it('counts recorded runs from the khstates read, so a run missing from them is lost', () => {
    expect(recordedOf(['r1', 'r2', 'r3'], ['r1', undefined, 'r3', 'r9'])).toBe(2);
    expect(recordedOf(['r1', 'r1'], [])).toBe(0);
  });
});

/** A khstate with so many outcomes recorded, and optionally a run active (and its report stored). */
function state(recorded: number, active?: { uuid: string; reported?: boolean }): KhState {
  const s = newKhState('c', 'ns');
  const run = active && {
    uuid: active.uuid,
    startedAtMs: 0,
    deadlineMs: 60_000,
    pod: 'c-1',
    runner: 'r',
    leaseUntilMs: 2_000,
  };
  s.metadata.annotations = {
    [ANNOTATION.totals]: JSON.stringify({ ...emptyTotals(), succeeded: recorded }),
    ...(run ? { [ANNOTATION.run]: JSON.stringify(run) } : {}),
    ...(active?.reported
      ? {
          [ANNOTATION.report]: JSON.stringify({
            uuid: active.uuid,
            atMs: 1,
            ok: true,
            errors: [],
            pod: 'c-1',
          }),
        }
      : {}),
  };
  return s;
}

describe('the random kills that count (helpers/kill-point.ts)', () => {
  const sent = { signalSent: true, exitSignal: 'SIGKILL', runPodExists: false };
  it.each([
    {
      name: 'a timer that fired after the runner exited',
      a: { ...sent, signalSent: false, before: state(1), after: state(2) },
      point: KILL_POINTS.notSent,
    },
    {
      name: 'a runner that exited by itself',
      a: { ...sent, exitSignal: null, before: state(1), after: state(2) },
      point: KILL_POINTS.exitedFirst,
    },
    {
      name: 'a kill after the outcome was written',
      a: { ...sent, before: state(1), after: state(2) },
      point: KILL_POINTS.recorded,
    },
    {
      name: 'a kill before the claim',
      a: { ...sent, before: state(1), after: state(1) },
      point: KILL_POINTS.beforeClaim,
    },
  ])('not a kill of a live run: $name', ({ a, point }) => {
    expect(killPoint(a)).toBe(point);
    expect(isLiveKill(point)).toBe(false);
  });

  it.each([
    {
      name: 'claimed, no pod yet',
      a: { ...sent, before: state(1), after: state(1, { uuid: 'u2' }) },
      point: KILL_POINTS.claimed,
    },
    {
      name: 'its pod created',
      a: { ...sent, runPodExists: true, before: state(1), after: state(1, { uuid: 'u2' }) },
      point: KILL_POINTS.podCreated,
    },
    {
      name: 'its report stored',
      a: { ...sent, runPodExists: true, before: state(1), after: state(1, { uuid: 'u2', reported: true }) },
      point: KILL_POINTS.reportStored,
    },
  ])('a kill of a live run: $name', ({ a, point }) => {
    expect(killPoint(a)).toBe(point);
    expect(isLiveKill(point)).toBe(true);
  });
});

describe('scenarios that lose (test/faults/fixtures/losing-scenarios.fixture.ts, run by Vitest)', () => {
  it('leave their row, measured before the assertion that fails, then fail', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'khrun-fault-rows-'));
    const out = join(dir, 'rows.jsonl');
    try {
      const code = await new Promise<number | null>((done, reject) => {
        const child = spawn(
          join(root, 'node_modules/.bin/vitest'),
          ['run', '--config', join(root, 'test/faults/fixtures/vitest.config.ts')],
          { cwd: root, env: { ...process.env, [FAULTS_OUT_ENV]: out }, stdio: 'ignore' },
        );
        child.once('error', reject);
        child.once('close', done);
      });
      expect(code, 'the losing scenarios fail their run').toBe(1);
      const table = renderFaultTable(faultRows(await readFile(out, 'utf8')));
      expect(table.slice(2).sort()).toEqual(
        [
          "| fixture: a lost report | 3 | **FAILED: every reported run recorded: expected [ 'run-a', 'run-c' ] to deeply equal [ 'run-a', 'run-b', 'run-c' ]**; 2 of 3 recorded | 3 | 2 | **1** |",
          '| fixture: a lost report, concurrent | 2 | **FAILED: every reported run recorded: expected 1 to be 2 // Object.is equality**; 1 of 2 | 2 | 1 | **1** |',
          '| fixture: no figures | ? | **FAILED: the runner never exited** (before it measured anything) | ? | ? | ? |',
          '| fixture: nothing lost | 1 | recorded | 1 | 1 | 0 |',
        ].sort(),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
