import * as crypto from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  bearerToken,
  type GateConfig,
  gateTrigger,
  type TriggerRequest,
  tokenMatches,
} from '../../lib/trigger/gate.ts';

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

const TOKEN = 'c0ffee-token-0123456789abcdef';
const config: GateConfig = {
  auth: { kind: 'bearer', token: TOKEN },
  scope: { namespaces: ['kuberhealthy', 'team-a'] },
  canWait: true,
};
const request = (over: Partial<TriggerRequest> = {}): TriggerRequest => ({
  method: 'POST',
  query: 'namespace=kuberhealthy&healthcheck=example-success',
  authorization: `Bearer ${TOKEN}`,
  ...over,
});

describe('the trigger gate', () => {
  it('lets a POST with the token and a valid check through', () => {
    expect(gateTrigger(config, request())).toEqual({
      ok: true,
      target: { namespace: 'kuberhealthy', checkName: 'example-success', wait: false },
    });
    // khrun's name for the parameter, the scheme in any case, and wait.
    expect(
      gateTrigger(
        config,
        request({ query: 'check=a.b-c&namespace=team-a&wait=true', authorization: `bearer ${TOKEN}` }),
      ),
    ).toEqual({ ok: true, target: { namespace: 'team-a', checkName: 'a.b-c', wait: true } });
    // Both names, naming the same check, are one check.
    expect(gateTrigger(config, request({ query: 'namespace=team-a&healthcheck=x&check=x' }))).toMatchObject({
      ok: true,
      target: { checkName: 'x' },
    });
    // Any namespace when the scope is all of them.
    expect(
      gateTrigger({ ...config, scope: 'all' }, request({ query: 'namespace=elsewhere&healthcheck=x' })),
    ).toMatchObject({ ok: true, target: { namespace: 'elsewhere' } });
  });

  it.each([
    ['GET', 'GET'],
    ['PUT', 'PUT'],
    ['lower-case post', 'post'],
    ['no method', ''],
  ])('refuses %s with 405 and Allow: POST', (_label, method) => {
    expect(gateTrigger(config, request({ method }))).toEqual({
      ok: false,
      status: 405,
      reason: expect.stringContaining('use POST'),
      headers: { allow: 'POST' },
    });
  });

  it.each([
    ['no Authorization header', undefined, 'Bearer realm="khrun"'],
    ['an empty header', '', 'Bearer realm="khrun"'],
    ['another scheme', `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}`, 'Bearer realm="khrun"'],
    ['the scheme without a token', 'Bearer ', 'Bearer realm="khrun"'],
    ['two tokens', `Bearer ${TOKEN} ${TOKEN}`, 'Bearer realm="khrun"'],
    ['a wrong token', 'Bearer not-the-token-0123456789', 'Bearer realm="khrun", error="invalid_token"'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer realm="khrun", error="invalid_token"'],
    ['the token and more', `Bearer ${TOKEN}x`, 'Bearer realm="khrun", error="invalid_token"'],
    [
      'the token in other case',
      `Bearer ${TOKEN.toUpperCase()}`,
      'Bearer realm="khrun", error="invalid_token"',
    ],
  ])('refuses %s with 401 and WWW-Authenticate', (_label, authorization, challenge) => {
    expect(gateTrigger(config, request({ authorization }))).toEqual({
      ok: false,
      status: 401,
      reason: expect.any(String),
      headers: { 'www-authenticate': challenge },
    });
  });

  it('judges the credential before the parameters: without it, every request gets the same 401', () => {
    for (const query of ['', 'namespace=BAD', 'x=1', 'namespace=elsewhere&healthcheck=x']) {
      expect(gateTrigger(config, request({ query, authorization: undefined }))).toMatchObject({
        ok: false,
        status: 401,
        reason: 'send the trigger token as "Authorization: Bearer <token>"',
      });
    }
  });

  it.each([
    ['no parameters', '', /the namespace is required; POST \/api\/run\?namespace=NS&healthcheck=NAME/],
    ['no namespace', 'healthcheck=x', /the namespace is required/],
    ['an empty namespace', 'namespace=&healthcheck=x', /the namespace is required/],
    ['no check', 'namespace=team-a', /the check is required/],
    ['an empty check', 'namespace=team-a&check=', /the check is required/],
    ['an upper-case namespace', 'namespace=Team-A&healthcheck=x', /"Team-A" is not a namespace name/],
    ['a namespace with a dot', 'namespace=team.a&healthcheck=x', /is not a namespace name/],
    ['a namespace of 64', `namespace=${'a'.repeat(64)}&healthcheck=x`, /is not a namespace name/],
    ['a path in the namespace', 'namespace=..%2Fkube-system&healthcheck=x', /is not a namespace name/],
    ['a check with a slash', 'namespace=team-a&healthcheck=a%2Fb', /"a\/b" is not a khcheck name/],
    ['a check ending in -', 'namespace=team-a&healthcheck=x-', /is not a khcheck name/],
    ['a check of 254', `namespace=team-a&healthcheck=${'a'.repeat(254)}`, /is not a khcheck name/],
    ['a check with a NUL', 'namespace=team-a&healthcheck=x%00', /is not a khcheck name/],
    ['two different checks', 'namespace=team-a&healthcheck=x&check=y', /name different checks/],
    [
      'a repeated namespace',
      'namespace=team-a&namespace=kuberhealthy&healthcheck=x',
      /namespace is given more than once/,
    ],
    ['an unknown parameter', 'namespace=team-a&healthcheck=x&name=y', /unknown parameter "name"/],
    ['a bad wait', 'namespace=team-a&healthcheck=x&wait=soon', /wait must be true or false/],
    ['a huge query', `namespace=team-a&healthcheck=x&pad=${'a'.repeat(2_000)}`, /over 1024 characters/],
  ])('refuses %s with 400 and the reason', (_label, query, reason) => {
    const decision = gateTrigger(config, request({ query }));
    expect(decision).toMatchObject({ ok: false, status: 400, headers: {} });
    expect(decision.ok ? '' : decision.reason).toMatch(reason);
  });

  it('refuses a namespace this endpoint does not serve with 403', () => {
    expect(gateTrigger(config, request({ query: 'namespace=kube-system&healthcheck=x' }))).toEqual({
      ok: false,
      status: 403,
      reason: 'namespace kube-system is not served here (this endpoint serves kuberhealthy, team-a)',
      headers: {},
    });
  });

  it('refuses wait=true where the endpoint cannot wait (the Lambda)', () => {
    const lambda: GateConfig = { auth: { kind: 'iam' }, scope: 'all', canWait: false };
    const query = 'namespace=team-a&healthcheck=x';
    expect(
      gateTrigger(lambda, request({ query: `${query}&wait=true`, authorization: undefined })),
    ).toMatchObject({
      ok: false,
      status: 400,
      reason: expect.stringMatching(/cannot wait/),
    });
    // IAM: the platform authenticated the caller; no bearer token is looked for.
    expect(gateTrigger(lambda, request({ query, authorization: undefined }))).toMatchObject({ ok: true });
  });

  it('keeps quoted input short in its reasons', () => {
    const decision = gateTrigger(config, request({ query: `namespace=${'X'.repeat(500)}&healthcheck=x` }));
    expect(decision.ok ? '' : decision.reason.length).toBeLessThan(200);
  });
});

describe('the token comparison', () => {
  const timingSafeEqual = vi.mocked(crypto.timingSafeEqual);
  beforeEach(() => {
    timingSafeEqual.mockClear();
  });

  it('is true only for the same token', () => {
    expect(tokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(tokenMatches(`${TOKEN}x`, TOKEN)).toBe(false);
    expect(tokenMatches(TOKEN.slice(1), TOKEN)).toBe(false);
    expect(tokenMatches('', TOKEN)).toBe(false);
    expect(tokenMatches('', '')).toBe(false);
    expect(tokenMatches('é', 'e\u0301')).toBe(false);
  });

  it('compares in constant time: one timingSafeEqual of two 32-byte digests, whatever the lengths', () => {
    for (const given of ['', 'x', TOKEN, `${TOKEN}${'y'.repeat(10_000)}`]) {
      timingSafeEqual.mockClear();
      tokenMatches(given, TOKEN);
      expect(timingSafeEqual).toHaveBeenCalledTimes(1);
      const [a, b] = timingSafeEqual.mock.calls[0] as [Buffer, Buffer];
      expect([a.length, b.length]).toEqual([32, 32]);
      // Digests, never the tokens themselves.
      expect(a.equals(Buffer.from(given))).toBe(false);
    }
  });

  it('reads the token of a Bearer header only', () => {
    expect(bearerToken(`Bearer ${TOKEN}`)).toBe(TOKEN);
    expect(bearerToken(`BEARER  ${TOKEN} `)).toBe(TOKEN);
    expect(bearerToken(TOKEN)).toBeUndefined();
    expect(bearerToken(`Bearer\t${TOKEN}`)).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
