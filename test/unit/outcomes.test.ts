import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../lib/state/outcome.ts';
import {
  executionErrorOutcome,
  exitedWithoutReportOutcome,
  reportedOutcome,
  skippedOutcome,
  timedOutOutcome,
} from '../../lib/state/outcomes.ts';

const check = { namespace: 'ns', name: 'web' };
const at = { node: 'node-a', durationMs: 1_500 };
const run = { startedAtMs: 10_000 };

describe('reportedOutcome', () => {
  it.each<[string, { ok: boolean; errors: string[]; atMs: number }, RunOutcome]>([
    [
      'an ok report succeeds',
      { ok: true, errors: [], atMs: 12_500 },
      { kind: 'Succeeded', ok: true, errors: [], node: 'node-a', durationMs: 2_500, reportedAtMs: 12_500 },
    ],
    [
      'a failing report fails with its errors',
      { ok: false, errors: ['dns down'], atMs: 11_000 },
      {
        kind: 'Failed',
        ok: false,
        errors: ['dns down'],
        node: 'node-a',
        durationMs: 1_000,
        reportedAtMs: 11_000,
      },
    ],
    [
      'a report stamped before the start lasts 0 ms',
      { ok: true, errors: [], atMs: 9_000 },
      { kind: 'Succeeded', ok: true, errors: [], node: 'node-a', durationMs: 0, reportedAtMs: 9_000 },
    ],
  ])('%s', (_, report, expected) => {
    expect(reportedOutcome(report, run, 'node-a')).toEqual(expected);
  });
});

describe('the outcomes without a report', () => {
  it.each<[string, RunOutcome, RunOutcome]>([
    [
      'timed out: v2 wording around the detail',
      timedOutOutcome(check, 'pod Running', at),
      {
        kind: 'TimedOut',
        ok: false,
        errors: [
          'Check execution error: ns/web: timed out waiting for checker pod to report in (pod Running)',
        ],
        ...at,
      },
    ],
    [
      'exited without reporting: an execution error naming the exit',
      exitedWithoutReportOutcome(check, 'container exited with code 1', at),
      {
        kind: 'ExecutionError',
        ok: false,
        errors: ['Check execution error: ns/web: container exited with code 1'],
        ...at,
      },
    ],
    [
      'execution error: the reason behind v2 prefix',
      executionErrorOutcome(check, 'image pull failed', { node: '', durationMs: 0 }),
      {
        kind: 'ExecutionError',
        ok: false,
        errors: ['Check execution error: ns/web: image pull failed'],
        node: '',
        durationMs: 0,
      },
    ],
    [
      'skipped: ok, no errors, the note kept',
      skippedOutcome('pod deleted', at),
      { kind: 'Skipped', ok: true, errors: [], note: 'pod deleted', ...at },
    ],
  ])('%s', (_, actual, expected) => {
    expect(actual).toEqual(expected);
    expect(actual.reportedAtMs).toBeUndefined();
  });
});
