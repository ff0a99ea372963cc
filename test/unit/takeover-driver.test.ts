import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck } from '../../lib/state/resources.ts';
import { handBack } from '../../lib/takeover/hand-back.ts';
import { TAKEOVER_ANNOTATION } from '../../lib/takeover/installations.ts';
import { readOwnerMarker } from '../../lib/takeover/owner-marker.ts';
import { takeOver } from '../../lib/takeover/take-over.ts';
import type { FakeKube } from './fakes/fake-kube.ts';
import { FakeTakeoverKube } from './fakes/fake-takeover-kube.ts';

const KH_UUID = '11111111-2222-4333-8444-555555555555';
const NOW_MS = 1_700_000_000_000;

function kuberhealthyRan(kube: FakeKube, namespace: string, name: string) {
  kube.putCheck({ metadata: { namespace, name }, spec: {} } as unknown as KhCheck);
  const s = newKhState(name, namespace);
  s.spec = {
    ...s.spec,
    OK: false,
    Errors: ['boom'],
    AuthoritativePod: 'kuberhealthy-7d9f8c6b5d-x2k4z',
    uuid: KH_UUID,
  };
  kube.putState(s);
}

const deps = (kube: FakeTakeoverKube) => ({ kube, clock: { nowMs: () => NOW_MS }, log: silentLog });

describe('takeOver', () => {
  it('writes no khstate before Kuberhealthy’s pods are gone, then adopts and stops its run in flight', async () => {
    const kube = new FakeTakeoverKube();
    kuberhealthyRan(kube, 'a', 'one');
    kuberhealthyRan(kube, 'b', 'two');
    kube.putPod({
      metadata: {
        name: 'one-1700',
        namespace: 'a',
        labels: { 'kuberhealthy-check-name': 'one', 'kuberhealthy-run-id': KH_UUID },
      },
      status: { phase: 'Running' },
    } as V1Pod);
    const signal = new AbortController().signal;
    const done = takeOver(deps(kube), { podsGoneTimeoutMs: 1_000, signal });
    await kube.untilStep('scale 0');
    await new Promise((r) => setImmediate(r));
    expect(kube.steps).toEqual(['scale 0']);
    kube.endPods();
    const result = await done;
    expect(kube.steps).toEqual(['scale 0', 'pods gone', 'write a/one', 'write b/two']);
    expect(result).toMatchObject({
      kind: 'taken-over',
      replicas: 2,
      adopted: ['a/one', 'b/two'],
      closedRuns: ['a/one'],
    });
    expect(kube.pods.has('a/one-1700')).toBe(false);
    expect(readOwnerMarker(kube.state('a', 'one')!)).toEqual({
      owner: 'khrun',
      from: 'kuberhealthy/kuberhealthy',
      atMs: NOW_MS,
      uuid: KH_UUID,
    });
    expect(kube.state('a', 'one')!.spec.Errors).toEqual(['boom']);
    expect(JSON.parse(kube.deployment.metadata!.annotations![TAKEOVER_ANNOTATION]!)).toEqual({
      replicas: 2,
      atMs: NOW_MS,
    });

    // Run again (say the first was interrupted): nothing rescaled from 0, nothing rewritten, count kept.
    kube.steps.length = 0;
    const again = await takeOver(deps(kube), { podsGoneTimeoutMs: 1_000, signal });
    expect(kube.steps).toEqual(['pods gone']);
    expect(again).toMatchObject({ replicas: 2, adopted: [], unchanged: ['a/one', 'b/two'] });
  });
});

describe('handBack', () => {
  it('marks the khstates Kuberhealthy’s, waits for khrun’s live run, then restores the replicas', async () => {
    const kube = new FakeTakeoverKube();
    kuberhealthyRan(kube, 'a', 'one');
    kube.endPods();
    const signal = new AbortController().signal;
    await takeOver(deps(kube), { podsGoneTimeoutMs: 1_000, signal });
    const live = structuredClone(kube.state('a', 'one')!);
    live.metadata.annotations![ANNOTATION.run] = JSON.stringify({
      uuid: 'khrun-run',
      startedAtMs: NOW_MS,
      deadlineMs: NOW_MS + 60_000,
      pod: 'one-x',
      runner: 'r',
      leaseUntilMs: NOW_MS + 30_000,
    });
    kube.putState(live);
    kube.steps.length = 0;
    const done = handBack(deps(kube), { signal });
    await kube.untilStep('write a/one');
    await new Promise((r) => setImmediate(r));
    expect(kube.steps).toEqual(['write a/one']);
    const recorded = structuredClone(kube.state('a', 'one')!);
    delete recorded.metadata.annotations![ANNOTATION.run];
    kube.putState(recorded);
    const result = await done;
    expect(kube.steps).toEqual(['write a/one', 'scale 2']);
    expect(result).toMatchObject({
      kind: 'handed-back',
      replicas: 2,
      handedBack: ['a/one'],
      waitedFor: ['a/one'],
    });
    expect(readOwnerMarker(kube.state('a', 'one')!)).toMatchObject({
      owner: 'kuberhealthy',
      to: 'kuberhealthy/kuberhealthy',
    });
    expect(kube.deployment.metadata!.annotations![TAKEOVER_ANNOTATION]).toBeUndefined();
  });
});
