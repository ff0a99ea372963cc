import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { type CallerLookup, identifyCaller, normalizeIp } from '../../lib/report/identify-caller.ts';

const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const OTHER = '0b7e4f63-9a4c-4b8e-8a52-3f2f1c5d6e7a';
const IP = '10.244.1.17';

function checkerPod(
  opts: {
    name?: string;
    uuid?: string;
    annotation?: string | null;
    env?: boolean;
    extraEnvUuid?: string;
  } = {},
): V1Pod {
  const uuid = opts.uuid ?? UUID;
  const annotation = opts.annotation === undefined ? 'dns' : opts.annotation;
  return {
    metadata: {
      name: opts.name ?? 'dns-1709634030',
      namespace: 'checks',
      labels: { 'kuberhealthy-run-id': uuid },
      annotations: annotation === null ? { other: 'x' } : { 'comcast.github.io/check-name': annotation },
    },
    spec: {
      containers: [
        {
          name: 'main',
          image: 'img',
          env:
            opts.env === false
              ? [{ name: 'TARGET', value: 'kube-dns' }]
              : [
                  { name: 'TARGET', value: 'kube-dns' },
                  { name: 'KH_RUN_UUID', value: uuid },
                ],
        },
        ...(opts.extraEnvUuid
          ? [{ name: 'second', image: 'img', env: [{ name: 'KH_RUN_UUID', value: opts.extraEnvUuid }] }]
          : []),
      ],
    },
    status: { phase: 'Running', podIP: IP },
  };
}

function lookup(byRunId: V1Pod[], byIp: V1Pod[]) {
  const fake = {
    podsByRunId: vi.fn(async (_uuid: string) => byRunId),
    livePodsByIp: vi.fn(async (_ip: string) => byIp),
  } satisfies CallerLookup;
  return fake;
}

const CALLER = { ok: true, namespace: 'checks', checkName: 'dns', uuid: UUID, pod: 'dns-1709634030' };

describe('identifyCaller by the kh-run-uuid header', () => {
  it('identifies the pod the header names, by its annotation and env', async () => {
    const l = lookup([checkerPod()], []);
    expect(await identifyCaller(l, UUID, IP)).toEqual(CALLER);
    expect(l.podsByRunId).toHaveBeenCalledWith(UUID);
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });

  it('rejects a header that does not match the KH_RUN_UUID of the pod it names', async () => {
    const pod = checkerPod({ uuid: OTHER });
    const l = lookup([pod], [pod]);
    expect(await identifyCaller(l, UUID, IP)).toEqual({
      ok: false,
      reason: 'the kh-run-uuid header does not match the pod it names',
    });
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });

  it('takes the last KH_RUN_UUID of the pod, as v2 does', async () => {
    const l = lookup([checkerPod({ extraEnvUuid: OTHER })], []);
    expect(await identifyCaller(l, UUID, IP)).toEqual({
      ok: false,
      reason: 'the kh-run-uuid header does not match the pod it names',
    });
    expect(
      await identifyCaller(lookup([checkerPod({ uuid: OTHER, extraEnvUuid: UUID })], []), UUID, IP),
    ).toMatchObject({
      ok: true,
      uuid: UUID,
    });
  });

  it.each([
    { name: 'spaces and punctuation', header: 'not a uuid!' },
    { name: 'a label selector injection', header: `${UUID},app=x` },
    { name: 'more than 63 characters', header: 'a'.repeat(64) },
    { name: 'a slash', header: '../dns' },
  ])('rejects a malformed header ($name) without any lookup', async ({ header }) => {
    const l = lookup([checkerPod()], [checkerPod()]);
    expect(await identifyCaller(l, header, IP)).toEqual({
      ok: false,
      reason: 'the kh-run-uuid header is not a run UUID',
    });
    expect(l.podsByRunId).not.toHaveBeenCalled();
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });

  it('takes the replacement pod and the old, terminating pod of one run as that run (after an adoption)', async () => {
    const terminating = checkerPod({ name: 'dns-old' });
    terminating.metadata = { ...terminating.metadata, deletionTimestamp: new Date(0) };
    const l = lookup([terminating, checkerPod({ name: 'dns-new' })], []);
    expect(await identifyCaller(l, UUID, IP)).toEqual({ ...CALLER, pod: 'dns-new' });
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });

  it('refuses to guess when pods carrying the header’s run UUID belong to different checks', async () => {
    const l = lookup([checkerPod(), checkerPod({ name: 'forged', annotation: 'other' })], [checkerPod()]);
    expect(await identifyCaller(l, UUID, IP)).toEqual({
      ok: false,
      reason: '2 pods of different runs carry that run UUID; refusing to guess',
    });
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });

  it('falls back to the source IP when the header names no pod', async () => {
    const l = lookup([], [checkerPod()]);
    expect(await identifyCaller(l, UUID, IP)).toEqual(CALLER);
    expect(l.podsByRunId).toHaveBeenCalledWith(UUID);
    // A header-sending client is looked up by IP once, without waiting for a pod IP to appear.
    expect(l.livePodsByIp).toHaveBeenCalledWith(IP, { wait: false });
  });

  it('rejects when the header names no pod and there is no source address (IP fallback off)', async () => {
    const l = lookup([], []);
    expect(await identifyCaller(l, UUID, undefined)).toEqual({
      ok: false,
      reason: `no checker pod carries run UUID ${UUID} (a finished or unknown run)`,
    });
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });
});

describe('identifyCaller by source IP', () => {
  it.each([undefined, ''])('treats a header of %j as absent', async (header) => {
    const l = lookup([checkerPod()], [checkerPod()]);
    expect(await identifyCaller(l, header, IP)).toEqual(CALLER);
    expect(l.podsByRunId).not.toHaveBeenCalled();
    expect(l.livePodsByIp).toHaveBeenCalledWith(IP, { wait: true });
  });

  it('rejects when no live pod has the IP', async () => {
    const l = lookup([], []);
    expect(await identifyCaller(l, undefined, IP)).toEqual({
      ok: false,
      reason: `no kh-run-uuid header, and no running checker pod has IP ${IP}; send the header kh-run-uuid: $KH_RUN_UUID`,
    });
    expect(l.livePodsByIp).toHaveBeenCalledWith(IP, { wait: true });
  });

  it('rejects when two pods share the IP (hostNetwork)', async () => {
    const l = lookup([], [checkerPod(), checkerPod({ name: 'other-check-1', uuid: OTHER })]);
    expect(await identifyCaller(l, undefined, IP)).toEqual({
      ok: false,
      reason: `2 pods have IP ${IP}; send the kh-run-uuid header`,
    });
  });

  it('identifies the one pod with the IP', async () => {
    expect(
      await identifyCaller(
        lookup([], [checkerPod({ name: 'p-2', annotation: 'dns-internal' })]),
        undefined,
        IP,
      ),
    ).toEqual({
      ...CALLER,
      checkName: 'dns-internal',
      pod: 'p-2',
    });
  });

  it('rejects without a header and without a source address, looking nothing up', async () => {
    const l = lookup([checkerPod()], [checkerPod()]);
    expect(await identifyCaller(l, undefined, undefined)).toEqual({
      ok: false,
      reason: 'no kh-run-uuid header and no source address to identify the checker pod',
    });
    expect(l.podsByRunId).not.toHaveBeenCalled();
    expect(l.livePodsByIp).not.toHaveBeenCalled();
  });
});

describe('identifyCaller rejects pods that are not checker pods', () => {
  it.each([
    {
      name: 'no check-name annotation',
      pod: checkerPod({ annotation: null }),
      reason: 'pod dns-1709634030 has no comcast.github.io/check-name annotation: it is not a checker pod',
    },
    {
      name: 'an empty check-name annotation',
      pod: checkerPod({ annotation: '' }),
      reason: 'pod dns-1709634030 has no comcast.github.io/check-name annotation: it is not a checker pod',
    },
    {
      name: 'no KH_RUN_UUID env var',
      pod: checkerPod({ env: false }),
      reason: 'pod dns-1709634030 has no KH_RUN_UUID env var: it is not a checker pod',
    },
  ])('$name (header path and IP path)', async ({ pod, reason }) => {
    expect(await identifyCaller(lookup([pod], []), UUID, IP)).toEqual({ ok: false, reason });
    expect(await identifyCaller(lookup([], [pod]), undefined, IP)).toEqual({ ok: false, reason });
  });
});

describe('normalizeIp', () => {
  it.each([
    { address: '::ffff:10.244.1.17', ip: '10.244.1.17' },
    { address: '10.244.1.17', ip: '10.244.1.17' },
    { address: 'fd00::17', ip: 'fd00::17' },
    { address: '::1', ip: '::1' },
    { address: '', ip: undefined },
    { address: undefined, ip: undefined },
  ])('$address → $ip', ({ address, ip }) => {
    expect(normalizeIp(address)).toBe(ip);
  });
});
