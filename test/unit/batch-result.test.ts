import { describe, expect, it } from 'vitest';
import type { BatchEntry } from '../../lib/batch/batch-entry.ts';
import {
  type BatchCheckResult,
  batchExitCode,
  type CheckOutcome,
  checkExitCode,
} from '../../lib/batch/batch-result.ts';
import { exitCodeFor, resultJson } from '../../lib/commands/exit-codes.ts';
import { runResultText } from '../../lib/commands/run.ts';
import { batchOutput, SINGLE_RUN } from '../../lib/commands/run-batch.ts';
import type { IterationResult } from '../../lib/run/iteration.ts';
import { OutcomeKind } from '../../lib/state/outcome-kind.ts';

// A batch's exit code and output, from its checks' results: each check maps as `khrun run --check` maps it
// alone, and the batch prints one entry per check.

const check: BatchEntry = { namespace: 'ns', name: 'c' };
const ran = (result: IterationResult): CheckOutcome => ({ kind: 'ran', result });
const RESULTS = {
  recorded: ran({
    kind: 'recorded',
    runUuid: 'u',
    adopted: true,
    outcome: { kind: OutcomeKind.Failed, ok: false, errors: ['dns down'], node: 'n1', durationMs: 1500 },
  }),
  busy: ran({ kind: 'busy', runUuid: 'u', reason: 'another run is live' }),
  superseded: ran({ kind: 'superseded', runUuid: 'u', reason: 'taken over' }),
  'check-deleted': ran({ kind: 'check-deleted', runUuid: 'u' }),
  refused: ran({ kind: 'refused', runUuid: '', reason: 'a Kuberhealthy runs it' }),
  interrupted: ran({ kind: 'interrupted', runUuid: 'u', reason: 'received SIGTERM' }),
  'not-found': { kind: 'not-found', reason: 'khcheck ns/c not found' },
  failed: { kind: 'failed', error: 'connect ECONNREFUSED' },
  'not-started': { kind: 'not-started', reason: 'not started' },
} satisfies Record<string, CheckOutcome>;
const batchOf = (...kinds: (keyof typeof RESULTS)[]): BatchCheckResult[] =>
  kinds.map((k, i) => ({ check: { namespace: 'ns', name: `c${i}` }, outcome: RESULTS[k] }));

describe('a batch exit code', () => {
  it.each([
    ['recorded', 0],
    ['busy', 0],
    ['superseded', 0],
    ['check-deleted', 0],
    ['refused', 2],
    ['interrupted', 1],
    ['not-found', 2],
    ['failed', 1],
    ['not-started', 1],
  ] as const)('a check %s is exit %i, as `khrun run --check` exits for it alone', (kind, code) => {
    const outcome = RESULTS[kind];
    expect(checkExitCode(outcome, SINGLE_RUN)).toBe(code);
    if (outcome.kind === 'ran' && outcome.result.kind !== 'already-ran')
      expect(exitCodeFor(outcome.result)).toBe(code);
    expect(batchExitCode(batchOf(kind), SINGLE_RUN)).toBe(code);
  });

  it('is 0 only when every check would be; 1 wins over 2', () => {
    expect(batchExitCode(batchOf('recorded', 'busy', 'superseded', 'check-deleted'), SINGLE_RUN)).toBe(0);
    expect(batchExitCode(batchOf('recorded', 'not-found', 'busy'), SINGLE_RUN)).toBe(2);
    expect(batchExitCode(batchOf('refused', 'recorded', 'failed', 'not-found'), SINGLE_RUN)).toBe(1);
    expect(batchExitCode(batchOf('interrupted', 'refused'), SINGLE_RUN)).toBe(1);
  });
});

describe('a batch output', () => {
  const batch = batchOf('recorded', 'not-found', 'failed', 'busy');

  it('json: one object per line per check, in the list order; a run as a single run prints it', () => {
    const lines = batchOutput(batch, 'json').split('\n');
    expect(lines).toHaveLength(4);
    const [first, missing, failed, busy] = lines.map((l) => JSON.parse(l));
    if (RESULTS.recorded.kind !== 'ran' || RESULTS.recorded.result.kind === 'already-ran')
      throw new Error('unreachable');
    expect(first).toEqual(resultJson(RESULTS.recorded.result, { namespace: 'ns', name: 'c0' }));
    expect(first).not.toHaveProperty('runUuid');
    expect(missing).toEqual({ check: 'ns/c1', result: 'not-found', reason: 'khcheck ns/c not found' });
    expect(failed).toEqual({ check: 'ns/c2', result: 'failed', error: 'connect ECONNREFUSED' });
    expect(busy).toEqual({ check: 'ns/c3', result: 'busy', reason: 'another run is live' });
  });

  it("text: a single run's line per check (a recorded check's errors under it), the failure's error as reason", () => {
    expect(batchOutput(batch, 'text')).toBe(
      [
        'ns/c0: Failed in 1.50s\n  dns down',
        'ns/c1: not-found (khcheck ns/c not found)',
        'ns/c2: failed (connect ECONNREFUSED)',
        'ns/c3: busy (another run is live)',
      ].join('\n'),
    );
    expect(runResultText({ check: 'ns/c3', result: 'busy', reason: 'another run is live' })).toBe(
      'ns/c3: busy (another run is live)',
    );
  });

  it('yaml: one document per check', () => {
    const docs = batchOutput(batchOf('busy', 'failed'), 'yaml').split('\n---\n');
    expect(docs).toEqual([
      'check: ns/c0\nresult: busy\nreason: another run is live',
      'check: ns/c1\nresult: failed\nerror: connect ECONNREFUSED',
    ]);
  });

  it('a check named once is one entry', () => {
    expect(batchOutput([{ check, outcome: RESULTS.busy }], 'json').split('\n')).toHaveLength(1);
  });
});
