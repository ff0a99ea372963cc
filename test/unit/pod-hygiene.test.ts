import type { V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podsToRemove } from '../../lib/run/pod-hygiene.ts';

const CURRENT = 'run-current';

/** khrun's checker pods are owned by their khcheck (pod-builder); v2's by the Kuberhealthy pod, or nothing. */
const KHCHECK_OWNER = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  name: 'dns',
  uid: 'check-uid',
};
const V2_OWNER = { apiVersion: 'v1', kind: 'Pod', name: 'kuberhealthy-7d9f', uid: 'kh-pod-uid' };

function pod(
  name: string,
  opts: {
    run?: string;
    phase: string;
    createdAt?: string;
    deleting?: boolean;
    noRunLabel?: boolean;
    owners?: V1OwnerReference[];
  },
): V1Pod {
  return {
    metadata: {
      name,
      ownerReferences: opts.owners ?? [KHCHECK_OWNER],
      labels: {
        'kuberhealthy-check-name': 'dns',
        ...(opts.noRunLabel ? {} : { 'kuberhealthy-run-id': opts.run ?? `run-of-${name}` }),
      },
      ...(opts.createdAt ? { creationTimestamp: new Date(opts.createdAt) } : {}),
      ...(opts.deleting ? { deletionTimestamp: new Date('2024-03-05T10:00:00Z') } : {}),
    },
    status: { phase: opts.phase },
  };
}

const names = (pods: V1Pod[]) => pods.map((p) => p.metadata?.name);

describe('podsToRemove', () => {
  it('removes live pods of other runs and keeps the current run’s pods', () => {
    const pods = [
      pod('current', { run: CURRENT, phase: 'Pending' }),
      pod('current-done', { run: CURRENT, phase: 'Succeeded' }),
      pod('other-running', { phase: 'Running' }),
      pod('other-pending', { phase: 'Pending' }),
      pod('other-unknown', { phase: 'Unknown' }),
      pod('unlabelled', { phase: 'Running', noRunLabel: true }),
    ];
    expect(names(podsToRemove(pods, CURRENT, 3))).toEqual([
      'other-running',
      'other-pending',
      'other-unknown',
      'unlabelled',
    ]);
  });

  it('treats a Running pod whose containers all terminated as finished, not live', () => {
    const done: V1Pod = {
      ...pod('sidecar-less-done', { phase: 'Running', createdAt: '2024-03-05T09:00:00Z' }),
      status: {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'main',
            image: 'i',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 0 } },
          },
        ],
      },
    };
    expect(podsToRemove([done], CURRENT, 1)).toEqual([]);
    expect(names(podsToRemove([done], CURRENT, 0))).toEqual(['sidecar-less-done']);
  });

  it.each([
    { keep: 0, removed: ['d4', 'd3', 'd2', 'd1'] },
    { keep: 1, removed: ['d3', 'd2', 'd1'] },
    { keep: 2, removed: ['d2', 'd1'] },
    { keep: 4, removed: [] },
    { keep: 10, removed: [] },
    { keep: -1, removed: ['d4', 'd3', 'd2', 'd1'] },
  ])('keeps the newest $keep finished pods and removes the older ones', ({ keep, removed }) => {
    const pods = [
      pod('d2', { phase: 'Failed', createdAt: '2024-03-05T08:00:00Z' }),
      pod('d4', { phase: 'Succeeded', createdAt: '2024-03-05T10:00:00Z' }),
      pod('d1', { phase: 'Succeeded', createdAt: '2024-03-05T07:00:00Z' }),
      pod('d3', { phase: 'Succeeded', createdAt: '2024-03-05T09:00:00Z' }),
    ];
    // Removed oldest-last: newest kept first, then the rest in descending age order.
    expect(names(podsToRemove(pods, CURRENT, keep))).toEqual(removed);
  });

  it('does not count the current run’s finished pod against keepFinished', () => {
    const pods = [
      pod('mine', { run: CURRENT, phase: 'Succeeded', createdAt: '2024-03-05T11:00:00Z' }),
      pod('old-1', { phase: 'Succeeded', createdAt: '2024-03-05T10:00:00Z' }),
      pod('old-2', { phase: 'Succeeded', createdAt: '2024-03-05T09:00:00Z' }),
    ];
    expect(names(podsToRemove(pods, CURRENT, 1))).toEqual(['old-2']);
  });

  it('ignores pods that are already being deleted, live or finished', () => {
    const pods = [
      pod('going-live', { phase: 'Running', deleting: true }),
      pod('going-done', { phase: 'Succeeded', createdAt: '2024-03-05T12:00:00Z', deleting: true }),
      pod('done-new', { phase: 'Succeeded', createdAt: '2024-03-05T11:00:00Z' }),
      pod('done-old', { phase: 'Succeeded', createdAt: '2024-03-05T10:00:00Z' }),
    ];
    // The terminating finished pod does not take one of the kept slots either.
    expect(names(podsToRemove(pods, CURRENT, 1))).toEqual(['done-old']);
  });

  it('lists live pods first, then the surplus finished ones', () => {
    const pods = [
      pod('done-old', { phase: 'Failed', createdAt: '2024-03-05T10:00:00Z' }),
      pod('live', { phase: 'Running' }),
      pod('done-new', { phase: 'Failed', createdAt: '2024-03-05T11:00:00Z' }),
    ];
    expect(names(podsToRemove(pods, CURRENT, 1))).toEqual(['live', 'done-old']);
  });

  it("never removes pods khrun did not create: v2's checker pods of the same check, live or finished", () => {
    // During a migration v2 and khrun both run the check; v2's pods carry the same check-name label.
    const pods = [
      pod('v2-live', { phase: 'Running', owners: [V2_OWNER] }),
      pod('v2-unowned', { phase: 'Pending', owners: [] }),
      pod('v2-done', { phase: 'Succeeded', createdAt: '2024-03-05T08:00:00Z', owners: [V2_OWNER] }),
      pod('other-check', {
        phase: 'Running',
        owners: [{ ...KHCHECK_OWNER, name: 'another-check' }],
      }),
      pod('khrun-live', { phase: 'Running' }),
      pod('khrun-done', { phase: 'Succeeded', createdAt: '2024-03-05T09:00:00Z' }),
    ];
    expect(names(podsToRemove(pods, CURRENT, 0))).toEqual(['khrun-live', 'khrun-done']);
  });

  it('returns nothing for no pods', () => {
    expect(podsToRemove([], CURRENT, 3)).toEqual([]);
  });
});
