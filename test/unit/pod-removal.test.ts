import { ApiException, type CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { afterDeleteError, deletePodGracefully } from '../../lib/kube/pod-removal.ts';

/** An API error as client-node raises it: the v1.Status body as raw text. */
function apiError(code: number, status: Record<string, unknown> = {}): ApiException<string> {
  return new ApiException(
    code,
    `HTTP-Code: ${code}`,
    JSON.stringify({ kind: 'Status', code, ...status }),
    {},
  );
}

describe('afterDeleteError: a pod already gone is success, a refusal keeps the pod', () => {
  it.each([
    [
      '404 naming the pod',
      apiError(404, { reason: 'NotFound', details: { name: 'p', kind: 'pods' } }),
      false,
    ],
    [
      '404 of a namespace already gone',
      apiError(404, { reason: 'NotFound', details: { kind: 'namespaces' } }),
      false,
    ],
    [
      '409 under a uid precondition (the name is another pod now)',
      apiError(409, { reason: 'Conflict' }),
      true,
    ],
  ])('%s → gone', (_, error, uid) => {
    expect(afterDeleteError(error, { uidPrecondition: uid })).toEqual({ kind: 'gone' });
  });

  it.each([
    ['403: RBAC or policy 3', apiError(403, { reason: 'Forbidden' }), 403, /forbidden/],
    [
      '429: the API server sheds load',
      apiError(429, { reason: 'TooManyRequests' }),
      429,
      /next clean-up retries/,
    ],
    ['409 without a uid precondition', apiError(409, { reason: 'Conflict' }), 409, /next clean-up retries/],
  ])('%s → kept, saying why', (_, error, status, why) => {
    expect(afterDeleteError(error, { uidPrecondition: false })).toEqual({
      kind: 'kept',
      status,
      why: expect.stringMatching(why),
    });
  });

  it.each([
    ['500', apiError(500)],
    ['503', apiError(503)],
    ['422', apiError(422, { reason: 'Invalid' })],
    [
      'a connection failure (no status)',
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    ],
  ])('%s is no decision to take here: rethrown', (_, error) => {
    expect(afterDeleteError(error, { uidPrecondition: true })).toEqual({ kind: 'rethrow' });
  });
});

/** A CoreV1Api that records the pod deletes it is sent and answers with `answer`. */
function recordingCore(answer: () => Promise<unknown>) {
  const calls: unknown[] = [];
  const core = {
    deleteNamespacedPod: (request: unknown) => {
      calls.push(request);
      return answer();
    },
    createNamespacedPodEviction: () => {
      throw new Error('khrun never evicts');
    },
  } as unknown as CoreV1Api;
  return { core, calls };
}

describe('deletePodGracefully', () => {
  it("sends one DELETE with the uid precondition and no grace period of its own (the pod's applies)", async () => {
    const { core, calls } = recordingCore(async () => ({}));
    expect(await deletePodGracefully(core, 'ns', 'p', 'u-1')).toEqual({ kind: 'deleted' });
    expect(calls).toEqual([{ namespace: 'ns', name: 'p', body: { preconditions: { uid: 'u-1' } } }]);
  });

  it('without a uid, by name only', async () => {
    const { core, calls } = recordingCore(async () => ({}));
    await deletePodGracefully(core, 'ns', 'p');
    expect(calls).toEqual([{ namespace: 'ns', name: 'p' }]);
  });

  it('a pod already gone is success; a refusal is kept; anything else is thrown', async () => {
    expect(
      await deletePodGracefully(recordingCore(() => Promise.reject(apiError(404))).core, 'ns', 'p'),
    ).toEqual({
      kind: 'gone',
    });
    expect(
      await deletePodGracefully(recordingCore(() => Promise.reject(apiError(403))).core, 'ns', 'p', 'u'),
    ).toMatchObject({ kind: 'kept', status: 403 });
    await expect(
      deletePodGracefully(recordingCore(() => Promise.reject(apiError(503))).core, 'ns', 'p'),
    ).rejects.toThrow(/503/);
  });
});
