import { describe, expect, it } from 'vitest';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readActiveRun,
  readConsecutiveFailures,
  readLastOutcome,
} from '../../lib/state/khstate.ts';
import type { RunOutcome } from '../../lib/state/outcome.ts';
import { claimRun, recordOutcome, toKubeTime } from '../../lib/state/record.ts';
import type { KhState } from '../../lib/state/resources.ts';

const T0 = Date.UTC(2024, 2, 5, 10, 20, 30, 250);
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const REQUIRED = ['AuthoritativePod', 'Errors', 'Namespace', 'Node', 'OK', 'RunDuration', 'uuid'] as const;

const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1709634030',
  runner: 'runner-a',
  leaseUntilMs: T0 + 30_000,
};

/** A khstate from an earlier run, mid-way through this one: claimed, with bookkeeping of its own. */
function claimedState(consecutiveFailures?: string): KhState {
  const state = newKhState('dns', 'checks');
  state.metadata.resourceVersion = '41';
  state.metadata.labels = { team: 'platform' };
  state.spec = {
    OK: false,
    Errors: ['old failure'],
    RunDuration: '3s',
    Namespace: 'checks',
    Node: 'old-node',
    LastRun: '2024-03-05T10:00:00Z',
    AuthoritativePod: 'old-runner',
    uuid: UUID,
  };
  state.metadata.annotations = {
    [ANNOTATION.run]: JSON.stringify(RUN),
    [ANNOTATION.report]: JSON.stringify({ uuid: UUID, atMs: T0 + 1_500, ok: true, errors: [], pod: RUN.pod }),
    'example.com/keep': 'me',
    ...(consecutiveFailures === undefined ? {} : { [ANNOTATION.consecutiveFailures]: consecutiveFailures }),
  };
  return state;
}

const succeeded: RunOutcome = {
  kind: 'Succeeded',
  ok: true,
  errors: [],
  node: 'node-1',
  durationMs: 1_500,
  reportedAtMs: T0 + 1_500,
};
const failed: RunOutcome = {
  kind: 'Failed',
  ok: false,
  errors: ['kube-dns did not answer', 'coredns pods not ready'],
  node: 'node-2',
  durationMs: 2_000,
  reportedAtMs: T0 + 2_000,
};
const timedOut: RunOutcome = {
  kind: 'TimedOut',
  ok: false,
  errors: [
    'Check execution error: checks/dns: timed out waiting for checker pod to report in (pod x was Pending)',
  ],
  node: '',
  durationMs: 300_005,
};
const CTX = { nowMs: T0 + 300_005, runner: 'runner-b' };

describe('toKubeTime', () => {
  it.each([
    { ms: T0, text: '2024-03-05T10:20:30Z' },
    { ms: Date.UTC(2024, 2, 5, 10, 20, 30, 999), text: '2024-03-05T10:20:30Z' },
    { ms: Date.UTC(2024, 2, 5, 10, 20, 31, 0), text: '2024-03-05T10:20:31Z' },
    { ms: 0, text: '1970-01-01T00:00:00Z' },
  ])('$ms → $text (RFC 3339, second precision, no millis)', ({ ms, text }) => {
    expect(toKubeTime(ms)).toBe(text);
  });
});

describe('recordOutcome', () => {
  it('writes all seven required spec fields for a success, taking LastRun from the report time', () => {
    const next = recordOutcome(claimedState('4'), RUN, succeeded, CTX);
    expect(next.spec).toEqual({
      OK: true,
      Errors: [],
      RunDuration: '1.5s',
      Namespace: 'checks',
      Node: 'node-1',
      LastRun: '2024-03-05T10:20:31Z',
      AuthoritativePod: 'runner-b',
      uuid: UUID,
    });
    for (const field of REQUIRED) expect(next.spec).toHaveProperty(field);
  });

  it('writes the report’s errors for a failure', () => {
    const next = recordOutcome(claimedState(), RUN, failed, CTX);
    expect(next.spec).toEqual({
      OK: false,
      Errors: ['kube-dns did not answer', 'coredns pods not ready'],
      RunDuration: '2s',
      Namespace: 'checks',
      Node: 'node-2',
      LastRun: '2024-03-05T10:20:32Z',
      AuthoritativePod: 'runner-b',
      uuid: UUID,
    });
  });

  it('uses the time of recording as LastRun when nothing reported', () => {
    const next = recordOutcome(claimedState(), RUN, timedOut, CTX);
    expect(next.spec.LastRun).toBe('2024-03-05T10:25:30Z');
    expect(next.spec.RunDuration).toBe('5m0.005s');
    expect(next.spec.Errors).toEqual(timedOut.errors);
    expect(next.spec.OK).toBe(false);
  });

  it.each([
    { ms: 0, text: '0s' },
    { ms: 1, text: '1ms' },
    { ms: 999, text: '999ms' },
    { ms: 1_500, text: '1.5s' },
    { ms: 61_000, text: '1m1s' },
    { ms: 3_600_000, text: '1h0m0s' },
  ])('formats a $ms ms run as the Go duration $text', ({ ms, text }) => {
    const next = recordOutcome(claimedState(), RUN, { ...succeeded, durationMs: ms }, CTX);
    expect(next.spec.RunDuration).toBe(text);
  });

  it('removes the run annotation and keeps every other annotation, label and the resourceVersion', () => {
    const before = claimedState('2');
    const next = recordOutcome(before, RUN, succeeded, CTX);
    expect(readActiveRun(next)).toBeUndefined();
    expect(next.metadata.annotations).not.toHaveProperty(ANNOTATION.run);
    expect(next.metadata.annotations?.['example.com/keep']).toBe('me');
    expect(next.metadata.annotations?.[ANNOTATION.report]).toBe(
      before.metadata.annotations?.[ANNOTATION.report],
    );
    expect(next.metadata.labels).toEqual({ team: 'platform' });
    expect(next.metadata.resourceVersion).toBe('41');
    expect(next.apiVersion).toBe('comcast.github.io/v1');
    expect(next.kind).toBe('KuberhealthyState');
  });

  it('does not modify its input', () => {
    const before = claimedState('2');
    const copy = structuredClone(before);
    recordOutcome(before, RUN, failed, CTX);
    expect(before).toEqual(copy);
  });

  it('writes the last outcome annotation', () => {
    const next = recordOutcome(claimedState(), RUN, failed, CTX);
    expect(readLastOutcome(next)).toEqual({
      uuid: UUID,
      kind: 'Failed',
      startedAtMs: T0,
      finishedAtMs: CTX.nowMs,
      durationMs: 2_000,
    });
  });

  it.each([
    { name: 'a first failure', before: undefined, outcome: failed, after: '1' },
    { name: 'a further failure', before: '4', outcome: failed, after: '5' },
    { name: 'a timeout', before: '1', outcome: timedOut, after: '2' },
    { name: 'a malformed counter', before: 'many', outcome: failed, after: '1' },
    { name: 'a negative counter', before: '-3', outcome: failed, after: '1' },
    { name: 'a success after failures', before: '7', outcome: succeeded, after: '0' },
    { name: 'a success without a counter', before: undefined, outcome: succeeded, after: '0' },
  ])('counts consecutive failures: $name → $after', ({ before, outcome, after }) => {
    const next = recordOutcome(claimedState(before), RUN, outcome, CTX);
    expect(next.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe(after);
    expect(readConsecutiveFailures(next)).toBe(Number(after));
  });

  it('changes no spec field and no failure count for a skipped run, but releases the claim', () => {
    const before = claimedState('3');
    const skipped: RunOutcome = {
      kind: 'Skipped',
      ok: true,
      errors: [],
      node: 'node-7',
      durationMs: 4_000,
      note: 'pod deleted',
    };
    const next = recordOutcome(before, RUN, skipped, CTX);
    expect(next.spec).toEqual(before.spec);
    expect(next.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('3');
    expect(readActiveRun(next)).toBeUndefined();
    expect(readLastOutcome(next)).toMatchObject({ uuid: UUID, kind: 'Skipped', durationMs: 4_000 });
  });

  it('completes a spec that lacks fields, writing Errors as an array', () => {
    const partial = claimedState();
    partial.spec = { uuid: UUID } as KhState['spec'];
    const next = recordOutcome(partial, RUN, timedOut, CTX);
    for (const field of REQUIRED) expect(next.spec).toHaveProperty(field);
    expect(next.spec.Namespace).toBe('checks');
    expect(Array.isArray(next.spec.Errors)).toBe(true);
  });
});

describe('claimRun', () => {
  it('sets spec.uuid and the run annotation, leaving the result fields', () => {
    const before = newKhState('dns', 'checks');
    before.metadata.resourceVersion = '9';
    before.spec = {
      ...before.spec,
      OK: false,
      Errors: ['previous'],
      RunDuration: '2s',
      AuthoritativePod: 'r0',
      uuid: 'older',
    };
    const next = claimRun(before, RUN);
    expect(next.spec).toEqual({ ...before.spec, LastRun: null, uuid: UUID });
    expect(JSON.parse(next.metadata.annotations?.[ANNOTATION.run] ?? '')).toEqual(RUN);
    expect(readActiveRun(next)).toEqual(RUN);
    expect(next.metadata.resourceVersion).toBe('9');
  });

  it('replaces an existing run annotation', () => {
    const next = claimRun(claimedState(), { ...RUN, uuid: 'next-run', runner: 'runner-c' });
    expect(readActiveRun(next)).toMatchObject({ uuid: 'next-run', runner: 'runner-c' });
    expect(next.spec.uuid).toBe('next-run');
  });
});
