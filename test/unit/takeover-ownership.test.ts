import { describe, expect, it } from 'vitest';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { kuberhealthyGuard } from '../../lib/takeover/guard.ts';
import { OWNER_ANNOTATION } from '../../lib/takeover/owner-marker.ts';
import { decideOwnership } from '../../lib/takeover/ownership.ts';
import { deploymentOfPod } from '../../lib/takeover/refusal.ts';

const KH_UUID = '11111111-2222-4333-8444-555555555555';
const KHRUN_UUID = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
const KH_POD = 'kuberhealthy-7d9f8c6b5d-x2k4z';

/** A khstate as v2.7.1's setCheckStateResource leaves it: spec only, its pod and run in it. */
function kuberhealthyState(annotations: Record<string, string> = {}): KhState {
  const s = newKhState('ping', 'checks');
  s.spec = { ...s.spec, OK: true, AuthoritativePod: KH_POD, uuid: KH_UUID, LastRun: '2026-12-01T10:00:00Z' };
  s.metadata.annotations = annotations;
  return s;
}

const outcome = (uuid: string) =>
  JSON.stringify({ uuid, kind: 'Succeeded', startedAtMs: 1, finishedAtMs: 2, durationMs: 1 });

/** A khstate khrun recorded last: spec.uuid is its last outcome's run. */
function khrunState(extra: Record<string, string> = {}): KhState {
  const s = newKhState('ping', 'checks');
  s.spec = { ...s.spec, AuthoritativePod: 'khrun-runner', uuid: KHRUN_UUID };
  s.metadata.annotations = { [ANNOTATION.outcome]: outcome(KHRUN_UUID), ...extra };
  return s;
}

const mark = (m: Record<string, unknown>) => ({ [OWNER_ANNOTATION]: JSON.stringify(m) });
const takenOver = mark({ owner: 'khrun', from: 'kuberhealthy/kuberhealthy', atMs: 5, uuid: KH_UUID });

describe('decideOwnership', () => {
  it.each([
    { name: 'no khstate yet', state: null, kind: 'khrun', why: 'no-kuberhealthy-run' },
    {
      name: 'a khstate never run',
      state: newKhState('ping', 'checks'),
      kind: 'khrun',
      why: 'no-kuberhealthy-run',
    },
    { name: "khrun's own last run", state: khrunState(), kind: 'khrun', why: 'no-kuberhealthy-run' },
    {
      name: 'v2 wrote it (its uuid, no khrun record)',
      state: kuberhealthyState(),
      kind: 'kuberhealthy',
      why: 'kuberhealthy-ran-last',
    },
    {
      name: 'v2 ran after khrun (a foreign uuid over khrun annotations)',
      state: { ...khrunState(), spec: { ...khrunState().spec, uuid: KH_UUID, AuthoritativePod: KH_POD } },
      kind: 'kuberhealthy',
      why: 'kuberhealthy-ran-last',
    },
    {
      name: 'taken over: its last uuid is in the mark',
      state: kuberhealthyState(takenOver),
      kind: 'khrun',
      why: 'taken-over',
    },
    {
      name: 'taken over, then khrun ran',
      state: khrunState(takenOver),
      kind: 'khrun',
      why: 'taken-over',
    },
    {
      name: 'taken over, but Kuberhealthy ran again since',
      state: {
        ...kuberhealthyState(takenOver),
        spec: { ...kuberhealthyState().spec, uuid: 'ffffffff-0000-4000-8000-000000000000' },
      },
      kind: 'kuberhealthy',
      why: 'kuberhealthy-resumed',
    },
    {
      name: 'handed back (even with khrun having run last)',
      state: khrunState(mark({ owner: 'kuberhealthy', to: 'kh/kuberhealthy', atMs: 9 })),
      kind: 'kuberhealthy',
      why: 'handed-back',
    },
    {
      name: 'a damaged mark counts as none',
      state: kuberhealthyState({ [OWNER_ANNOTATION]: '{"owner":"khrun"' }),
      kind: 'kuberhealthy',
      why: 'kuberhealthy-ran-last',
    },
  ])('$name → $kind ($why)', ({ state, kind, why }) => {
    const decided = decideOwnership(state, { takeOver: false });
    expect(decided).toMatchObject({ kind, why });
  });

  it('--take-over runs it whatever the khstate says', () => {
    expect(decideOwnership(kuberhealthyState(), { takeOver: true })).toEqual({
      kind: 'khrun',
      why: 'forced',
    });
  });

  it('a live khrun run is khrun’s (spec.uuid is the active run)', () => {
    const s = kuberhealthyState({
      [ANNOTATION.run]: JSON.stringify({
        uuid: KH_UUID,
        startedAtMs: 1,
        deadlineMs: 2,
        pod: 'p',
        runner: 'r',
        leaseUntilMs: 2,
      }),
    });
    expect(decideOwnership(s, { takeOver: false }).kind).toBe('khrun');
  });
});

describe('the refusal', () => {
  it('names the Kuberhealthy, the evidence, why, and the commands', () => {
    const refuse = kuberhealthyGuard({ namespace: 'checks', name: 'ping' }, { takeOver: false });
    const reason = refuse?.(kuberhealthyState());
    expect(reason).toBe(
      `Kuberhealthy (pod ${KH_POD}, Deployment kuberhealthy) runs checks/ping (its run 11111111 is in the khstate's spec.uuid); ` +
        'running it here too would run the check twice each interval, with two runs racing for one khstate. ' +
        'To move it to khrun: khrun takeover (scales Kuberhealthy to zero and adopts its khstates); ' +
        'if Kuberhealthy no longer runs it: khrun run --take-over (or KHRUN_TAKE_OVER=true).',
    );
  });

  it('after a handback it names the Deployment from the mark and the --from to use', () => {
    const refuse = kuberhealthyGuard({ namespace: 'checks', name: 'ping' }, { takeOver: false });
    const reason = refuse?.(khrunState(mark({ owner: 'kuberhealthy', to: 'kh/kuberhealthy', atMs: 9 })));
    expect(reason).toContain('checks/ping was handed back to Kuberhealthy (Deployment kh/kuberhealthy)');
    expect(reason).toContain('khrun takeover --from kh/kuberhealthy');
  });

  it('lets khrun’s own khstates through, and is off with takeOver', () => {
    expect(
      kuberhealthyGuard({ namespace: 'checks', name: 'ping' }, { takeOver: false })?.(khrunState()),
    ).toBeUndefined();
    expect(kuberhealthyGuard({ namespace: 'checks', name: 'ping' }, { takeOver: true })).toBeUndefined();
  });

  it.each([
    ['kuberhealthy-7d9f8c6b5d-x2k4z', 'kuberhealthy'],
    ['kh-v2-7d9f8c6b5d-x2k4z', 'kh-v2'],
    ['kuberhealthy', undefined],
  ])('pod %s → Deployment %s', (pod, deployment) => {
    expect(deploymentOfPod(pod)).toBe(deployment);
  });
});
