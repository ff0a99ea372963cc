import { describe, expect, it } from 'vitest';
import { LEASE_MAX_ATTEMPTS, renewLease } from '../../lib/run/renew-lease.ts';
import { type ActiveRun, ANNOTATION, newKhState, readActiveRun } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';

const NS = 'checks';
const NAME = 'dns';
const T0 = 1_700_000_000_000;
const RUN: ActiveRun = {
  uuid: '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1700000000',
  runner: 'runner-a',
  holder: 'runner-a/invocation-1',
  leaseUntilMs: T0 + 30_000,
};
const TARGET = { namespace: NS, checkName: NAME, run: RUN };

function stateWith(run: ActiveRun | null): KhState {
  const state = newKhState(NAME, NS);
  state.metadata.annotations = run ? { [ANNOTATION.run]: JSON.stringify(run), 'example.com/keep': 'me' } : {};
  return state;
}

const at = (nowMs: number) => ({ nowMs: () => nowMs });

describe('renewLease', () => {
  it.each([
    { name: 'now + leaseMs', nowMs: T0 + 15_000, leaseUntilMs: T0 + 45_000 },
    { name: 'the deadline, when sooner', nowMs: T0 + 290_000, leaseUntilMs: T0 + 300_000 },
  ])('holds the run for its holder until $name, changing nothing else', async ({ nowMs, leaseUntilMs }) => {
    const kube = new FakeKube();
    kube.putState(stateWith(RUN));
    const renewal = await renewLease({ kube, clock: at(nowMs) }, TARGET, { leaseMs: 30_000 });
    const stored = kube.state(NS, NAME) ?? null;
    expect(renewal).toEqual({ kind: 'renewed', state: stored });
    expect(readActiveRun(stored)).toEqual({ ...RUN, leaseUntilMs });
    expect(stored?.metadata.annotations?.['example.com/keep']).toBe('me');
  });

  it.each([
    {
      name: 'another run is active',
      stored: stateWith({ ...RUN, uuid: '99999999-9999-4999-8999-999999999999' }),
      holding: { kind: 'closed' },
    },
    { name: 'no run is active', stored: stateWith(null), holding: { kind: 'closed' } },
    { name: 'the khstate is gone', stored: undefined, holding: { kind: 'closed' } },
    {
      // The issue-11 case: after a write outage longer than the lease, a second invocation adopted the run.
      name: 'another invocation adopted the run (same run, another holder)',
      stored: stateWith({ ...RUN, runner: 'runner-b', holder: 'runner-b/invocation-7' }),
      holding: { kind: 'taken', by: 'runner-b' },
    },
    {
      name: 'another invocation of the same runner name adopted it',
      stored: stateWith({ ...RUN, holder: 'runner-a/invocation-2' }),
      holding: { kind: 'taken', by: 'runner-a' },
    },
  ])('writes nothing and says superseded when $name', async ({ stored, holding }) => {
    const kube = new FakeKube();
    if (stored) kube.putState(stored);
    const renewal = await renewLease({ kube, clock: at(T0) }, TARGET, { leaseMs: 30_000 });
    expect(renewal).toEqual({ kind: 'superseded', state: kube.state(NS, NAME) ?? null, holding });
    expect(kube.calls.replaceState).toBe(0);
  });

  it('reads again and renews when another write lands between its read and its write, keeping that write', async () => {
    const kube = new FakeKube();
    kube.putState(stateWith(RUN));
    kube.beforeReplace = () => {
      kube.beforeReplace = undefined;
      kube.putState({ ...stateWith(RUN), spec: { ...stateWith(RUN).spec, OK: false } });
    };
    const renewed = await renewLease({ kube, clock: at(T0) }, TARGET, { leaseMs: 30_000 });
    expect(renewed.kind).toBe('renewed');
    expect(kube.conflicts).toHaveLength(1);
    expect(kube.stateHistory.at(-1)?.spec.OK).toBe(false);
  });

  it('gives up with RetriesExhausted, naming the lease writer, when every attempt conflicts', async () => {
    const kube = new FakeKube();
    kube.putState(stateWith(RUN));
    const hammer = () => {
      kube.putState({ ...stateWith(RUN), spec: { ...stateWith(RUN).spec, OK: false } });
      kube.beforeReplace = hammer;
    };
    kube.beforeReplace = hammer;
    const renewing = renewLease({ kube, clock: at(T0) }, TARGET, { leaseMs: 30_000 });
    await expect(renewing).rejects.toMatchObject({
      name: 'RetriesExhausted',
      writer: 'lease',
      attempts: LEASE_MAX_ATTEMPTS,
    });
    expect(kube.conflicts).toHaveLength(LEASE_MAX_ATTEMPTS);
  });
});
