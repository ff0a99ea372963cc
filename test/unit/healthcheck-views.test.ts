import { describe, expect, it } from 'vitest';
import { podViewOf, v3PodName } from '../../lib/healthcheck/pod-view.ts';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { FOREIGN_RUNNER, planHealthCheckWrite, stateViewOf } from '../../lib/healthcheck/state-view.ts';
import { isKhrunCheckerPod } from '../../lib/run/pod-hygiene.ts';
import { ANNOTATION, readActiveRun, updateKhState } from '../../lib/state/khstate.ts';
import { claimRun, storeReport } from '../../lib/state/record.ts';

const T0 = 1_750_000_000_000;

function hc(status?: HealthCheck['status'], annotations: Record<string, string> = {}): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name: 'web', namespace: 'ns', uid: 'u', resourceVersion: '7', annotations },
    spec: { timeout: '45s', podSpec: { spec: { containers: [{ name: 'c', image: 'i' }] } } },
    ...(status ? { status } : {}),
  };
}

describe('stateViewOf', () => {
  it('a currentUUID without khrun’s lease is a run held by someone else until its deadline (never adoptable)', () => {
    const view = stateViewOf(hc({ ok: true, currentUUID: 'v3-run', lastRunUnix: T0 / 1000 }));
    expect(readActiveRun(view)).toEqual({
      uuid: 'v3-run',
      startedAtMs: T0,
      deadlineMs: T0 + 45_000,
      pod: '',
      runner: FOREIGN_RUNNER,
      leaseUntilMs: T0 + 45_000,
    });
    expect(view.spec.uuid).toBe('v3-run');
  });

  it('a khrun.dev/run annotation counts only while its uuid is the currentUUID', () => {
    const run = {
      uuid: 'old',
      startedAtMs: T0,
      deadlineMs: T0 + 1,
      pod: 'p',
      runner: 'r',
      leaseUntilMs: T0 + 1,
    };
    const idle = stateViewOf(hc({ ok: true, currentUUID: '' }, { [ANNOTATION.run]: JSON.stringify(run) }));
    expect(readActiveRun(idle)).toBeUndefined();
  });
});

describe('planHealthCheckWrite', () => {
  it('a claim writes status (currentUUID, lastRunUnix) first and the lease after; other annotations are kept', () => {
    const current = hc({ ok: true, currentUUID: '', successCount: 4 }, { 'team/owner': 'web' });
    const run = {
      uuid: 'r1',
      startedAtMs: T0,
      deadlineMs: T0 + 45_000,
      pod: 'p',
      runner: 'a',
      leaseUntilMs: T0 + 30_000,
    };
    const plan = planHealthCheckWrite(current, claimRun(stateViewOf(current), run));
    expect(plan.statusFirst).toBe(true);
    expect(plan.status).toEqual({
      ok: true,
      currentUUID: 'r1',
      lastRunUnix: T0 / 1000,
      successCount: 4,
    });
    expect(plan.annotations).toEqual({ 'team/owner': 'web', [ANNOTATION.run]: JSON.stringify(run) });
  });

  it('a report writes khrun’s annotations first, then ok/errors; no count until the run is recorded', () => {
    const run = {
      uuid: 'r1',
      startedAtMs: T0,
      deadlineMs: T0 + 45_000,
      pod: 'p',
      runner: 'a',
      leaseUntilMs: T0 + 30_000,
    };
    const current = hc(
      { ok: true, currentUUID: 'r1', lastRunUnix: T0 / 1000 },
      { [ANNOTATION.run]: JSON.stringify(run) },
    );
    const report = { uuid: 'r1', atMs: T0 + 2_000, ok: false, errors: ['down'], pod: 'p' };
    const plan = planHealthCheckWrite(current, storeReport(stateViewOf(current), report, { server: 's' }));
    expect(plan.statusFirst).toBe(false);
    expect(plan.status).toMatchObject({ ok: false, errors: ['down'], currentUUID: 'r1' });
    expect(plan.status?.failureCount).toBeUndefined();
    expect(plan.annotations?.[ANNOTATION.report]).toBe(JSON.stringify(report));
  });

  it('adopting a foreign run is what first writes it as khrun’s; an unrelated write never does', () => {
    const current = hc({ ok: true, currentUUID: 'v3-run', lastRunUnix: T0 / 1000 });
    const view = stateViewOf(current);
    const unrelated = updateKhState(view, (m) => ({ ...m, consecutiveFailures: 2 }));
    expect(planHealthCheckWrite(current, unrelated).annotations).toEqual({
      [ANNOTATION.consecutiveFailures]: '2',
    });
    const foreign = readActiveRun(view);
    if (!foreign) throw new Error('no foreign run');
    const adopted = claimRun(view, { ...foreign, runner: 'khrun', holder: 'h', leaseUntilMs: T0 + 5_000 });
    expect(
      readActiveRun({
        metadata: { annotations: planHealthCheckWrite(current, adopted).annotations },
      } as never)?.holder,
    ).toBe('h');
  });

  it('nothing changed: nothing to write', () => {
    const current = hc({ ok: false, errors: ['x'], currentUUID: '', failureCount: 2, lastFailureUnix: 5 });
    expect(planHealthCheckWrite(current, stateViewOf(current))).toEqual({ statusFirst: false });
  });
});

describe('pod views', () => {
  it('names pods as v3 does, a retry keeping khrun’s suffix', () => {
    expect(v3PodName('web-1750000000', 'web', 'abcdef12-0000')).toBe('web-abcde');
    expect(v3PodName('web-1750000000-lq3x', 'web', 'abcdef12-0000')).toBe('web-abcde-lq3x');
  });

  it('a pod of v3’s controller is never one khrun removes; khrun’s own is', () => {
    const pod = (annotations: Record<string, string>) => ({
      metadata: {
        name: 'web-abcde',
        labels: { healthcheck: 'web', 'kh-run-uuid': 'abcde' },
        annotations,
        ownerReferences: [
          { apiVersion: 'kuberhealthy.github.io/v2', kind: 'HealthCheck', name: 'web', uid: 'u' },
        ],
      },
    });
    expect(isKhrunCheckerPod(podViewOf(pod({ createdBy: 'kuberhealthy' })))).toBe(false);
    expect(
      isKhrunCheckerPod(podViewOf(pod({ createdBy: 'kuberhealthy', 'khrun.dev/checker-pod': 'true' }))),
    ).toBe(true);
    expect(podViewOf(pod({})).metadata?.labels?.['kuberhealthy-run-id']).toBe('abcde');
  });
});
