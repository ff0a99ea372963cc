import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { afterEvictionError } from '../../lib/kube/eviction-fallback.ts';

const POD = 'dns-1700000000';

/** An API error as client-node raises it: the v1.Status body as raw text. */
function apiError(code: number, status: Record<string, unknown> | string = {}): ApiException<string> {
  const body = typeof status === 'string' ? status : JSON.stringify({ kind: 'Status', code, ...status });
  return new ApiException(code, `HTTP-Code: ${code}`, body, {});
}

const decide = (error: unknown, uidPrecondition = false) =>
  afterEvictionError(error, { pod: POD, uidPrecondition });

describe('afterEvictionError: delete only where eviction is not served', () => {
  it.each([
    [
      'the pod is gone (Status names the pod)',
      apiError(404, { reason: 'NotFound', details: { name: POD, kind: 'pods' } }),
    ],
    [
      'the pod is gone (Status names it by name only)',
      apiError(404, { reason: 'NotFound', details: { name: POD } }),
    ],
  ])('404 about the pod: %s → gone, nothing deleted', (_, error) => {
    expect(decide(error)).toEqual({ kind: 'gone' });
  });

  it.each([
    ['a 404 that names no object (the eviction path is not served)', apiError(404, { reason: 'NotFound' })],
    ['a plain-text 404 page', apiError(404, '404 page not found')],
    ['405 Method Not Allowed', apiError(405, { reason: 'MethodNotAllowed' })],
    ['501 Not Implemented', apiError(501)],
  ])('%s → delete instead', (_, error) => {
    expect(decide(error)).toMatchObject({ kind: 'delete', why: expect.stringMatching(/does not serve/) });
  });

  it('a disruption budget (429) keeps the pod: never a delete', () => {
    const budget = apiError(429, {
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: { causes: [{ reason: 'DisruptionBudget' }] },
    });
    expect(decide(budget)).toEqual({
      kind: 'kept',
      status: 429,
      why: expect.stringMatching(/disruption budget.*not deleted instead/),
    });
    expect(decide(budget, true)).toMatchObject({ kind: 'kept', status: 429 });
  });

  it('a refusal (403: RBAC or an admission policy) keeps the pod: never a delete', () => {
    expect(decide(apiError(403, { reason: 'Forbidden' }))).toEqual({
      kind: 'kept',
      status: 403,
      why: expect.stringMatching(/forbidden.*not deleted instead/),
    });
  });

  it('a 409 is "another pod holds the name" under a uid precondition, else a conflict kept for later', () => {
    const conflict = apiError(409, { reason: 'Conflict' });
    expect(decide(conflict, true)).toEqual({ kind: 'gone' });
    expect(decide(conflict, false)).toMatchObject({ kind: 'kept', status: 409 });
  });

  it.each([
    ['500', apiError(500)],
    ['503', apiError(503)],
    ['422', apiError(422, { reason: 'Invalid' })],
    [
      'a connection failure (no status)',
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    ],
  ])('%s is no decision to take here: rethrown, nothing deleted', (_, error) => {
    expect(decide(error)).toEqual({ kind: 'rethrow' });
  });
});
