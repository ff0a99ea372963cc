import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podViewOf } from '../../lib/healthcheck/pod-view.ts';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { FOREIGN_RUNNER, planHealthCheckWrite, stateViewOf } from '../../lib/healthcheck/state-view.ts';
import { HISTORY_ANNOTATION } from '../../lib/state/history.ts';
import { readActiveRun } from '../../lib/state/khstate.ts';
import { adoptedState, handedBackState, orphanedPods } from '../../lib/takeover/adoption.ts';
import { kuberhealthyGuard } from '../../lib/takeover/guard.ts';
import type { KuberhealthyInstall } from '../../lib/takeover/installations.ts';
import { readOwnerMarker } from '../../lib/takeover/owner-marker.ts';
import { decideOwnership, V3_FINALIZER } from '../../lib/takeover/ownership.ts';
import { runTick } from '../../lib/tick/tick.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const V3_UUID = '11111111-2222-4333-8444-555555555555';
const install: KuberhealthyInstall = {
  namespace: 'kuberhealthy',
  name: 'kuberhealthy',
  line: 'v3',
  replicas: 1,
  selector: 'app=kuberhealthy',
  targets: 'all',
};

/** A HealthCheck as v3.0.0 leaves it: its finalizer, its status; optionally a run in flight. */
function v3Check(inFlight: boolean, finalizers = [V3_FINALIZER]): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name: 'dns', namespace: 'team', uid: 'uid-1', resourceVersion: '7', finalizers },
    spec: {
      runInterval: '1m',
      timeout: '30s',
      podSpec: { spec: { containers: [{ name: 'c', image: 'x' }] } },
    },
    status: {
      ok: true,
      currentUUID: inFlight ? V3_UUID : '',
      lastRunUnix: Math.floor((T0 - 10_000) / 1000),
      successCount: 4,
      lastOKUnix: Math.floor((T0 - 70_000) / 1000),
    },
  };
}

const v3Pod = (uuid: string, phase: string): V1Pod => ({
  metadata: {
    name: `dns-${uuid.slice(0, 5)}`,
    namespace: 'team',
    labels: { healthcheck: 'dns', 'kh-run-uuid': uuid },
    annotations: { createdBy: 'kuberhealthy', 'kh-run-uuid': uuid },
  },
  status: { phase },
});

describe('a HealthCheck v3 runs', () => {
  it('is refused by its finalizer alone, between runs and during one; --take-over and the owner mark let khrun run it', () => {
    for (const inFlight of [false, true]) {
      const view = stateViewOf(v3Check(inFlight));
      expect(decideOwnership(view, { takeOver: false })).toMatchObject({
        kind: 'kuberhealthy',
        why: 'v3-finalizer',
      });
      const reason = kuberhealthyGuard({ namespace: 'team', name: 'dns' }, { takeOver: false })?.(view);
      expect(reason).toContain('Kuberhealthy v3 runs team/dns (its finalizer kuberhealthy.io/healthcheck');
      expect(reason).toContain('adopts its HealthChecks');
      expect(kuberhealthyGuard({ namespace: 'team', name: 'dns' }, { takeOver: true })).toBeUndefined();
      const adopted = adoptedState(view, install, T0, FOREIGN_RUNNER)!;
      expect(decideOwnership(adopted, { takeOver: false })).toEqual({ kind: 'khrun', why: 'taken-over' });
    }
    // A HealthCheck nobody ran yet: no finalizer, no status, no refusal.
    const fresh = v3Check(false, []);
    delete fresh.status;
    expect(decideOwnership(stateViewOf(fresh), { takeOver: false }).kind).toBe('khrun');
  });

  it("is refused by its results when v3.0.0 lost the race to add its finalizer; khrun's own results are khrun's", () => {
    // v3.0.0's informer adds the finalizer with an update its scheduler's status write can beat (409, never
    // retried): a HealthCheck v3 ran, status and all, without the finalizer.
    const view = stateViewOf(v3Check(false, []));
    expect(decideOwnership(view, { takeOver: false })).toMatchObject({
      kind: 'kuberhealthy',
      why: 'v3-recorded',
    });
    const reason = kuberhealthyGuard({ namespace: 'team', name: 'dns' }, { takeOver: false })?.(view);
    expect(reason).toContain(
      "Kuberhealthy v3 runs team/dns (the HealthCheck's status holds results khrun did not record)",
    );
    expect(reason).toContain('khrun takeover');
    // The same status with khrun's history beside it: khrun recorded it.
    const ours = v3Check(false, []);
    ours.metadata.annotations = {
      [HISTORY_ANNOTATION]: JSON.stringify([
        { atMs: T0 - 70_000, kind: 'Succeeded', ok: true, durationMs: 900 },
      ]),
    };
    expect(decideOwnership(stateViewOf(ours), { takeOver: false }).kind).toBe('khrun');
    // A khstate (v2's kind) with a LastRun and no khrun record is judged by its uuid alone, as before.
    const khstate = { ...stateViewOf(v3Check(false, [])), kind: 'KuberhealthyState' };
    expect(decideOwnership(khstate, { takeOver: false }).kind).toBe('khrun');
  });

  it('adopted with its history; the run v3 had in flight closed (currentUUID cleared, nothing counted), its pod orphaned', () => {
    const hc = v3Check(true);
    const view = stateViewOf(hc);
    expect(readActiveRun(view)?.runner).toBe(FOREIGN_RUNNER);
    const adopted = adoptedState(view, install, T0, FOREIGN_RUNNER)!;
    expect(readActiveRun(adopted)).toBeUndefined();
    expect(readOwnerMarker(adopted)).toEqual({
      owner: 'khrun',
      from: 'kuberhealthy/kuberhealthy',
      atMs: T0,
      uuid: V3_UUID,
    });
    const plan = planHealthCheckWrite(hc, adopted);
    expect(plan.statusFirst).toBe(true);
    expect(plan.status).toMatchObject({
      currentUUID: '',
      successCount: 4,
      lastRunUnix: hc.status!.lastRunUnix,
    });
    expect(plan.status).not.toHaveProperty('failureCount');
    const pods = [v3Pod(V3_UUID, 'Running'), v3Pod('99999999-0000-4000-8000-000000000000', 'Succeeded')].map(
      podViewOf,
    );
    expect(orphanedPods(view, pods, FOREIGN_RUNNER).map((p) => p.metadata?.name)).toEqual(['dns-11111']);
    // Without the store's foreign runner (v2's rule: spec.uuid unknown to khrun) nothing is orphaned here.
    expect(orphanedPods(view, pods)).toEqual([]);
  });

  it('adopted once: a second takeover changes nothing; handback marks it v3’s again', () => {
    const adopted = adoptedState(stateViewOf(v3Check(false)), install, T0, FOREIGN_RUNNER)!;
    expect(adoptedState(adopted, install, T0 + 1, FOREIGN_RUNNER)).toBeUndefined();
    const back = handedBackState(adopted, install, T0 + 2)!;
    expect(decideOwnership(back, { takeOver: false })).toMatchObject({
      kind: 'kuberhealthy',
      why: 'handed-back',
    });
  });
});

describe("the tick's HealthCheck dispatch", () => {
  it('refuses a HealthCheck v3 runs (nothing sent), sends it with takeOver', async () => {
    const hc = v3Check(false);
    hc.status!.lastRunUnix = Math.floor((T0 - 120_000) / 1000);
    const sent: string[] = [];
    const kube: TickKube = {
      listChecks: async () => [],
      listStates: async () => [],
      readState: async () => null,
      createState: async (s) => s,
      replaceState: async (s) => s,
      listHealthChecks: async () => [hc],
      healthChecks: { get: async () => hc, replace: async (next: HealthCheck) => next },
    };
    const deps = {
      kube,
      dispatcher: {
        runsHealthChecks: true,
        refFor: () => 'ref',
        dispatch: async (c: { name: string }) => void sent.push(c.name),
      },
      clock: { nowMs: () => T0 },
      log: { debug() {}, info() {}, warn() {}, error() {} },
    };
    const c = { scope: 'all' as const, identity: 't', maxAttempts: 2 };
    const refused = await runTick(deps as never, c);
    expect(refused).toMatchObject([{ check: 'healthcheck/team/dns', result: 'refused' }]);
    expect(sent).toEqual([]);
    const forced = await runTick(deps as never, { ...c, takeOver: true });
    expect(forced).toMatchObject([{ result: 'dispatched' }]);
    expect(sent).toEqual(['dns']);
  });
});
