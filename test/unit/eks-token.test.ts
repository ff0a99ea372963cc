import { describe, expect, it } from 'vitest';
import { EKS_TOKEN_PREFIX, eksKubeConfig, eksTokenSource, mintEksToken } from '../../lib/aws/eks-token.ts';

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token/with+chars=',
};
const signingDate = new Date('2026-03-01T10:20:30.000Z');

// What the EKS authenticator accepts (aws-iam-authenticator pkg/token, tokenVerifier.Verify).
const ALLOWED_QUERY = new Set([
  'Action',
  'Version',
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-Security-Token',
  'X-Amz-Signature',
  'X-Amz-SignedHeaders',
]);

function decode(token: string): URL {
  expect(token.startsWith(EKS_TOKEN_PREFIX)).toBe(true);
  const encoded = token.slice(EKS_TOKEN_PREFIX.length);
  expect(encoded).not.toMatch(/[=+/]/);
  return new URL(Buffer.from(encoded, 'base64url').toString('utf8'));
}

describe('EKS token', () => {
  it('is a presigned STS GetCallerIdentity URL the EKS authenticator accepts', async () => {
    const { token, signedAtMs } = await mintEksToken({
      clusterName: 'prod-1',
      region: 'eu-west-1',
      credentials,
      signingDate,
    });
    expect(token.length).toBeLessThanOrEqual(4096);
    expect(signedAtMs).toBe(signingDate.getTime());
    const url = decode(token);
    expect(url.protocol).toBe('https:');
    expect(url.host).toBe('sts.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/');
    for (const key of url.searchParams.keys())
      expect(ALLOWED_QUERY.has(key), `query parameter ${key}`).toBe(true);
    const q = Object.fromEntries(url.searchParams);
    expect(q).toMatchObject({
      Action: 'GetCallerIdentity',
      Version: '2011-06-15',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKIDEXAMPLE/20260301/eu-west-1/sts/aws4_request',
      'X-Amz-Date': '20260301T102030Z',
      'X-Amz-Expires': '60',
      'X-Amz-Security-Token': credentials.sessionToken,
    });
    expect(q['X-Amz-SignedHeaders']?.split(';')).toEqual(['host', 'x-k8s-aws-id']);
    expect(q['X-Amz-Signature']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is deterministic for fixed inputs and changes with the cluster name', async () => {
    const a = await mintEksToken({ clusterName: 'prod-1', region: 'eu-west-1', credentials, signingDate });
    const b = await mintEksToken({ clusterName: 'prod-1', region: 'eu-west-1', credentials, signingDate });
    const c = await mintEksToken({ clusterName: 'prod-2', region: 'eu-west-1', credentials, signingDate });
    expect(a.token).toBe(b.token);
    expect(decode(c.token).searchParams.get('X-Amz-Signature')).not.toBe(
      decode(a.token).searchParams.get('X-Amz-Signature'),
    );
  });

  it('is reused until it is 10 minutes old, then minted again (once for concurrent callers)', async () => {
    let now = 0;
    let minted = 0;
    const source = eksTokenSource(
      async () => {
        minted++;
        return { token: `t${minted}`, signedAtMs: now };
      },
      { nowMs: () => now },
    );
    expect(await Promise.all([source(), source(), source()])).toEqual(['t1', 't1', 't1']);
    now = 9 * 60_000;
    expect(await source()).toBe('t1');
    now = 10 * 60_000;
    expect(await source()).toBe('t2');
    expect(minted).toBe(2);
  });

  it('is put on every request of the KubeConfig, fresh each time it is refreshed', async () => {
    let n = 0;
    const kc = eksKubeConfig({
      clusterName: 'prod-1',
      endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com/',
      caData: Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64'),
      token: async () => `k8s-aws-v1.tok${++n}`,
    });
    expect(kc.getCurrentCluster()?.server).toBe('https://ABC.gr7.eu-west-1.eks.amazonaws.com');
    // The generated API clients go through fetch options; watches and raw requests through https options.
    const first = await kc.applyToFetchOptions({});
    expect((first.headers as unknown as { get(name: string): string | null }).get('Authorization')).toBe(
      'Bearer k8s-aws-v1.tok1',
    );
    const https: { headers?: Record<string, string> } = { headers: {} };
    await kc.applyToHTTPSOptions(https);
    expect(https.headers?.Authorization).toBe('Bearer k8s-aws-v1.tok2');
  });
});
