import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import type { KubePort } from '../../lib/kube/port.ts';
import { removePodsByUid, removeRunPods } from '../../lib/run/remove-pod.ts';

const pod = (name: string, run: string | undefined, uid: string | undefined): V1Pod => ({
  metadata: { name, namespace: 'ns', uid, labels: run === undefined ? {} : { 'kuberhealthy-run-id': run } },
});

/** A port that lists the given pods and records each removal it is asked for. */
function recordingKube(pods: V1Pod[]) {
  const removed: [string, string, string | undefined][] = [];
  const kube = {
    listCheckPods: async () => pods,
    removePod: async (namespace: string, name: string, uid?: string) => {
      removed.push([namespace, name, uid]);
      return { kind: 'gone' as const };
    },
  } as unknown as KubePort;
  return { deps: { kube, log: silentLog }, removed };
}

describe('removePodsByUid', () => {
  it.each<[string, V1Pod[], [string, string, string | undefined][]]>([
    ['no pods: no request', [], []],
    [
      'each pod by its own uid, in order',
      [pod('a', 'r', 'u-a'), pod('b', 'r', 'u-b')],
      [
        ['ns', 'a', 'u-a'],
        ['ns', 'b', 'u-b'],
      ],
    ],
    ['a pod without a uid is removed by name only', [pod('c', 'r', undefined)], [['ns', 'c', undefined]]],
  ])('%s', async (_, pods, expected) => {
    const { deps, removed } = recordingKube([]);
    await removePodsByUid(deps, 'ns', pods);
    expect(removed).toEqual(expected);
  });
});

describe('removeRunPods', () => {
  it.each<[string, V1Pod[], [string, string, string | undefined][]]>([
    ["only the run's pods", [pod('mine', 'r1', 'u1'), pod('other', 'r2', 'u2')], [['ns', 'mine', 'u1']]],
    ['a pod without the run label is left', [pod('bare', undefined, 'u3')], []],
    [
      'every pod of the run',
      [pod('x', 'r1', 'ux'), pod('y', 'r1', 'uy')],
      [
        ['ns', 'x', 'ux'],
        ['ns', 'y', 'uy'],
      ],
    ],
  ])('%s', async (_, pods, expected) => {
    const { deps, removed } = recordingKube(pods);
    await removeRunPods(deps, { namespace: 'ns', name: 'web' }, 'r1');
    expect(removed).toEqual(expected);
  });
});
