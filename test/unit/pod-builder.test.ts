import type { V1Container, V1PodSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  buildCheckerPod,
  CHECK_NAME_LABEL,
  CHECKER_POD_CHECK_ANNOTATION,
  type CheckerPodInput,
  KH_ENV,
  podNameFor,
  RUN_ID_LABEL,
} from '../../lib/check/pod-builder.ts';
import type { ValidCheck } from '../../lib/state/resources.ts';

const NOW_MS = 1_700_000_000_999;
const UUID = '0b7e4f63-9a4c-4b8e-8a52-3f2f1c5d6e7a';
const URL = 'http://khrun.kuberhealthy.svc:8080/externalCheckStatus';

function validCheck(
  podSpec: V1PodSpec,
  extras: { extraLabels?: Record<string, string>; extraAnnotations?: Record<string, string> } = {},
): ValidCheck {
  return {
    name: 'Pod-Restarts',
    namespace: 'checks',
    uid: 'uid-123',
    timeoutMs: 300_000,
    runIntervalMs: 600_000,
    source: {
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyCheck',
      metadata: { name: 'Pod-Restarts', namespace: 'checks', uid: 'uid-123' },
      spec: { runInterval: '10m', timeout: '5m', podSpec, ...extras },
    },
  };
}

function input(check: ValidCheck, deadlineEpochMs = NOW_MS + 300_000): CheckerPodInput {
  return { check, runUuid: UUID, reportingUrl: URL, deadlineEpochMs, nowEpochMs: NOW_MS };
}

const injected = (deadlineSeconds: string) => [
  { name: 'KH_REPORTING_URL', value: URL },
  { name: 'KH_RUN_UUID', value: UUID },
  { name: 'KH_CHECK_RUN_DEADLINE', value: deadlineSeconds },
  { name: 'KH_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
];

const userEnv = [
  { name: 'KH_RUN_UUID', value: 'forged' },
  { name: 'TARGET', value: 'kube-dns' },
  { name: 'KH_REPORTING_URL', value: 'http://elsewhere' },
  { name: 'KH_POD_NAMESPACE', value: 'other' },
  { name: 'KH_CHECK_RUN_DEADLINE', value: '1' },
];

describe('buildCheckerPod', () => {
  it('names, places and owns the pod as v2 does', () => {
    const pod = buildCheckerPod(input(validCheck({ containers: [{ name: 'main', image: 'img' }] })));
    expect(pod.apiVersion).toBe('v1');
    expect(pod.kind).toBe('Pod');
    expect(pod.metadata?.name).toBe('pod-restarts-1700000000');
    expect(pod.metadata?.namespace).toBe('checks');
    expect(pod.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'comcast.github.io/v1',
        kind: 'KuberhealthyCheck',
        name: 'Pod-Restarts',
        uid: 'uid-123',
        controller: false,
        blockOwnerDeletion: false,
      },
    ]);
  });

  it.each([
    [
      'containers',
      {
        containers: [
          { name: 'a', image: 'i', env: userEnv },
          { name: 'b', image: 'i' },
          { name: 'c', image: 'i', env: [] },
        ],
      },
    ],
    [
      'initContainers',
      {
        containers: [{ name: 'a', image: 'i' }],
        initContainers: [
          { name: 'setup', image: 'i', env: userEnv },
          { name: 'more', image: 'i' },
        ],
      },
    ],
  ])('replaces user-set KH_* variables in every entry of %s', (_field, podSpec: V1PodSpec) => {
    const pod = buildCheckerPod(input(validCheck(podSpec)));
    const all: V1Container[] = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
    expect(all).toHaveLength(3);
    for (const container of all) {
      const user = container.env?.filter((entry) => entry.name === 'TARGET') ?? [];
      expect(container.env).toEqual([...user, ...injected('1700000300')]);
    }
    expect(all.filter((container) => container.env?.[0]?.name === 'TARGET')).toHaveLength(1);
  });

  it.each([
    [NOW_MS + 300_000, '1700000300'],
    [1_700_000_300_000, '1700000300'],
    [1_700_000_300_999, '1700000300'],
    [1_700_000_299_999, '1700000299'],
  ])('writes deadline %d ms as unix seconds %s (floored)', (deadlineEpochMs, seconds) => {
    const pod = buildCheckerPod(
      input(validCheck({ containers: [{ name: 'a', image: 'i' }] }), deadlineEpochMs),
    );
    const deadline = pod.spec?.containers[0]?.env?.find((entry) => entry.name === KH_ENV.deadline);
    expect(deadline?.value).toBe(seconds);
  });

  it('lets its own labels and annotation override the extras', () => {
    const check = validCheck(
      { containers: [{ name: 'a', image: 'i' }] },
      {
        extraLabels: { team: 'sre', app: 'mine', 'kuberhealthy-run-id': 'x', 'kuberhealthy-check-name': 'y' },
        extraAnnotations: { 'comcast.github.io/check-name': 'spoof', 'example.com/owner': 'me' },
      },
    );
    const pod = buildCheckerPod(input(check));
    expect(pod.metadata?.labels).toEqual({
      team: 'sre',
      app: 'kuberhealthy-check',
      [RUN_ID_LABEL]: UUID,
      [CHECK_NAME_LABEL]: 'Pod-Restarts',
    });
    expect(pod.metadata?.annotations).toEqual({
      'example.com/owner': 'me',
      [CHECKER_POD_CHECK_ANNOTATION]: 'Pod-Restarts',
    });
  });

  it.each([undefined, 'Always', 'OnFailure'])('forces restartPolicy Never over %s', (restartPolicy) => {
    const pod = buildCheckerPod(
      input(validCheck({ restartPolicy, containers: [{ name: 'a', image: 'i' }] })),
    );
    expect(pod.spec?.restartPolicy).toBe('Never');
  });

  it('keeps the rest of the pod spec', () => {
    const podSpec: V1PodSpec = {
      serviceAccountName: 'checker',
      nodeSelector: { role: 'infra' },
      containers: [{ name: 'a', image: 'i', args: ['--fast'], resources: { limits: { cpu: '100m' } } }],
    };
    const pod = buildCheckerPod(input(validCheck(podSpec)));
    expect(pod.spec).toMatchObject({
      ...podSpec,
      containers: [{ ...podSpec.containers[0], env: injected('1700000300') }],
    });
  });

  it('never aliases or modifies the check it was given', () => {
    const check = validCheck(
      {
        containers: [{ name: 'a', image: 'i', env: [...userEnv] }],
        initContainers: [{ name: 'b', image: 'i' }],
      },
      { extraLabels: { team: 'sre' }, extraAnnotations: { note: 'x' } },
    );
    const before = structuredClone(check);
    const pod = buildCheckerPod(input(check));
    expect(check).toEqual(before);

    pod.spec!.containers[0]!.env!.push({ name: 'LATER', value: '1' });
    pod.spec!.containers[0]!.args = ['mutated'];
    pod.metadata!.labels!['team'] = 'changed';
    pod.metadata!.annotations!['note'] = 'changed';
    expect(check).toEqual(before);

    const second = buildCheckerPod(input(check));
    expect(second.spec?.containers[0]?.env?.map((entry) => entry.name)).not.toContain('LATER');
    // The same injected objects must not be shared between containers either.
    expect(second.spec?.initContainers?.[0]?.env?.[0]).not.toBe(second.spec?.containers[0]?.env?.at(-4));
  });
});

describe('podNameFor', () => {
  it.each([
    ['Pod-Restarts', 1_700_000_000_999, 'pod-restarts-1700000000'],
    ['dns', 1_700_000_001_000, 'dns-1700000001'],
    ['dns', 999, 'dns-0'],
  ])('%s at %d ms is %s', (name, nowMs, expected) => {
    expect(podNameFor(name, nowMs)).toBe(expected);
  });
});
