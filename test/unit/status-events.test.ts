import { describe, expect, it } from 'vitest';
import type { EventSink, RecordedOutcome } from '../../lib/run/events.ts';
import { MAX_EVENT_MESSAGE_BYTES, outcomeEvent, outcomeEventText } from '../../lib/run/events.ts';
import { finishRun } from '../../lib/run/finish.ts';
import { runIteration } from '../../lib/run/iteration.ts';
import { readHistory } from '../../lib/state/history.ts';
import { type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { RunOutcome } from '../../lib/state/outcome.ts';
import type { KhCheck, ValidCheck } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';

const T0 = Date.UTC(2024, 2, 5, 10, 20, 30);
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const base = { node: 'node-1', durationMs: 1_500 };
const outcome = (o: Partial<RunOutcome> & Pick<RunOutcome, 'kind'>): RunOutcome => ({
  ok: o.kind === 'Succeeded',
  errors: [],
  ...base,
  ...o,
});

describe('outcomeEventText', () => {
  it.each([
    {
      o: outcome({ kind: 'Succeeded' }),
      type: 'Normal',
      reason: 'CheckSucceeded',
      message: 'run 6f1c2a7e succeeded in 1.5s on node node-1',
    },
    {
      o: outcome({ kind: 'Failed', errors: ['disk full', '', 'second'] }),
      type: 'Warning',
      reason: 'CheckFailed',
      message: 'run 6f1c2a7e failed after 1.5s on node node-1: disk full; second',
    },
    {
      o: outcome({
        kind: 'TimedOut',
        node: '',
        errors: ['Check execution error: a/b: timed out waiting for checker pod to report in'],
      }),
      type: 'Warning',
      reason: 'CheckTimedOut',
      message:
        'run 6f1c2a7e timed out after 1.5s: Check execution error: a/b: timed out waiting for checker pod to report in',
    },
    {
      o: outcome({
        kind: 'ExecutionError',
        node: '',
        errors: ['Check execution error: a/b: spec.timeout is bad'],
      }),
      type: 'Warning',
      reason: 'CheckFailed',
      message: 'run 6f1c2a7e failed after 1.5s: Check execution error: a/b: spec.timeout is bad',
    },
    {
      o: outcome({ kind: 'Skipped', note: 'the pod was deleted before it reported' }),
      type: 'Normal',
      reason: 'CheckSkipped',
      message: 'run 6f1c2a7e skipped, the previous result stands: the pod was deleted before it reported',
    },
  ])('$reason', ({ o, type, reason, message }) => {
    expect(outcomeEventText(o, UUID)).toEqual({ type, reason, message });
  });

  it('keeps a message with huge errors within 1 kB without splitting characters', () => {
    const text = outcomeEventText(outcome({ kind: 'Failed', errors: ['😀'.repeat(2_000)] }), UUID);
    expect(Buffer.byteLength(text.message)).toBeLessThanOrEqual(MAX_EVENT_MESSAGE_BYTES);
    expect(text.message.endsWith('…')).toBe(true);
    expect(text.message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});

describe('outcomeEvent', () => {
  it('is a core/v1 Event on the khcheck from component khrun', () => {
    const recorded: RecordedOutcome = {
      namespace: 'checks',
      name: 'dns',
      uid: 'uid-dns',
      runUuid: UUID,
      outcome: outcome({ kind: 'Failed', errors: ['boom'] }),
      atMs: T0,
      runner: 'khrun-runner-1',
    };
    const event = outcomeEvent(recorded);
    expect(event).toMatchObject({
      metadata: { namespace: 'checks' },
      involvedObject: {
        apiVersion: 'comcast.github.io/v1',
        kind: 'KuberhealthyCheck',
        name: 'dns',
        namespace: 'checks',
        uid: 'uid-dns',
      },
      type: 'Warning',
      reason: 'CheckFailed',
      source: { component: 'khrun', host: 'khrun-runner-1' },
      reportingComponent: 'khrun',
      count: 1,
      firstTimestamp: new Date(T0),
      lastTimestamp: new Date(T0),
    });
    expect(event.metadata.name).toMatch(/^dns\.[0-9a-f]+$/);
    expect(outcomeEvent(recorded).metadata.name).not.toBe(event.metadata.name);
  });
});

function sink(fail = false) {
  const seen: RecordedOutcome[] = [];
  const events: EventSink = {
    async outcomeRecorded(recorded) {
      seen.push(recorded);
      if (fail) throw new Error('events are forbidden');
    },
  };
  return { seen, events };
}

function deps(kube: FakeKube, events: EventSink) {
  const warnings: string[] = [];
  return {
    warnings,
    deps: {
      kube,
      clock: { nowMs: () => T0 + 2_000 },
      ids: { runUuid: () => UUID },
      log: { info() {}, debug() {}, error() {}, warn: (m: string) => void warnings.push(m) },
      events,
    },
  };
}

const CHECK: ValidCheck = {
  name: 'dns',
  namespace: 'checks',
  uid: 'uid-dns',
  runIntervalMs: 600_000,
  timeoutMs: 300_000,
  source: {} as KhCheck,
};
const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1',
  runner: 'r',
  leaseUntilMs: T0 + 30_000,
};

function claimedKube(): FakeKube {
  const kube = new FakeKube();
  const state = newKhState('dns', 'checks');
  state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(RUN) };
  kube.putState(state);
  return kube;
}

describe('the driver announces each recorded outcome', () => {
  it('emits one Event after finishRun records, with the check’s uid and the run', async () => {
    const kube = claimedKube();
    const s = sink();
    const d = deps(kube, s.events);
    const failed = outcome({ kind: 'Failed', errors: ['boom'] });
    expect(await finishRun(d.deps, CHECK, RUN, failed, { runner: 'r', maxAttempts: 3 })).toEqual(failed);
    expect(s.seen).toEqual([
      {
        namespace: 'checks',
        name: 'dns',
        uid: 'uid-dns',
        runUuid: UUID,
        outcome: failed,
        atMs: T0 + 2_000,
        runner: 'r',
      },
    ]);
    expect(readHistory(kube.state('checks', 'dns'))).toHaveLength(1);
  });

  it('still reports the run recorded when the Event cannot be written, and says so in the log', async () => {
    const kube = claimedKube();
    const s = sink(true);
    const d = deps(kube, s.events);
    const ok = outcome({ kind: 'Succeeded' });
    expect(await finishRun(d.deps, CHECK, RUN, ok, { runner: 'r', maxAttempts: 3 })).toEqual(ok);
    expect(s.seen).toHaveLength(1);
    expect(d.warnings).toEqual(['could not emit the outcome event']);
  });

  it('emits nothing when the run is no longer ours', async () => {
    const kube = new FakeKube();
    kube.putState(newKhState('dns', 'checks'));
    const s = sink();
    const d = deps(kube, s.events);
    expect(
      await finishRun(d.deps, CHECK, RUN, outcome({ kind: 'Succeeded' }), { runner: 'r', maxAttempts: 3 }),
    ).toBeUndefined();
    expect(s.seen).toEqual([]);
  });

  it('emits CheckFailed for an invalid khcheck recorded as an execution error', async () => {
    const kube = new FakeKube();
    kube.putCheck({
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyCheck',
      metadata: { name: 'dns', namespace: 'checks', uid: 'uid-dns' },
      spec: { runInterval: '10m', timeout: 'soon', podSpec: { containers: [{ name: 'c', image: 'i' }] } },
    });
    const s = sink();
    const d = deps(kube, s.events);
    const controller = new AbortController();
    await runIteration(d.deps, {
      namespace: 'checks',
      checkName: 'dns',
      runner: 'r',
      reportingUrl: 'http://x',
      signal: controller.signal,
    });
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]).toMatchObject({ uid: 'uid-dns', runUuid: '', outcome: { kind: 'ExecutionError' } });
    expect(outcomeEventText(s.seen[0]?.outcome as RunOutcome, '').reason).toBe('CheckFailed');
    expect(readHistory(kube.state('checks', 'dns'))).toMatchObject([{ kind: 'ExecutionError', ok: false }]);
  });
});
