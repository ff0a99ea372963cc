import { Sha256 } from '@aws-crypto/sha256-js';
import { KubeConfig } from '@kubernetes/client-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

/**
 * EKS bearer tokens, minted without the aws CLI: a presigned STS GetCallerIdentity URL whose signed
 * headers include x-k8s-aws-id (the cluster name), base64url-encoded behind `k8s-aws-v1.`. The EKS
 * authenticator accepts it for 15 minutes after X-Amz-Date, whatever X-Amz-Expires says.
 */
export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
export const EKS_TOKEN_VALID_MS = 15 * 60_000;
export const EKS_CLUSTER_ID_HEADER = 'x-k8s-aws-id';

export interface EksToken {
  token: string;
  /** X-Amz-Date as epoch ms: the token is accepted until this + 15 minutes. */
  signedAtMs: number;
}

export interface MintOptions {
  clusterName: string;
  region: string;
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** For tests: a fixed signing time. */
  signingDate?: Date;
}

/** The STS host the token names; the authenticator accepts regional hosts of the cluster's partition. */
export function stsHost(region: string): string {
  return region.startsWith('cn-') ? `sts.${region}.amazonaws.com.cn` : `sts.${region}.amazonaws.com`;
}

export async function mintEksToken(opts: MintOptions): Promise<EksToken> {
  const hostname = stsHost(opts.region);
  const signer = new SignatureV4({
    service: 'sts',
    region: opts.region,
    credentials: opts.credentials,
    sha256: Sha256,
  });
  const signingDate = opts.signingDate ?? new Date();
  const presigned = await signer.presign(
    new HttpRequest({
      protocol: 'https:',
      hostname,
      method: 'GET',
      // Exactly "/" and no query keys beyond the allowed ones: the authenticator rejects anything else.
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: hostname, [EKS_CLUSTER_ID_HEADER]: opts.clusterName },
    }),
    // presign hoists only x-amz-* headers into the query, so x-k8s-aws-id stays a signed header.
    { expiresIn: 60, signingDate },
  );
  const query = Object.entries(presigned.query ?? {})
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const url = `https://${presigned.hostname}${presigned.path}?${query}`;
  return {
    token: EKS_TOKEN_PREFIX + Buffer.from(url).toString('base64url'),
    signedAtMs: Math.floor(signingDate.getTime() / 1000) * 1000,
  };
}

/**
 * A token source that mints on first use and again once a token is refreshAfterMs old (default 10 min,
 * well inside the 15-minute validity, so clock skew and a request in flight do not matter). Concurrent
 * callers share one minting.
 */
export function eksTokenSource(
  mint: () => Promise<EksToken>,
  opts: { refreshAfterMs?: number; nowMs?: () => number } = {},
): () => Promise<string> {
  const refreshAfterMs = opts.refreshAfterMs ?? 10 * 60_000;
  const now = opts.nowMs ?? Date.now;
  let current: EksToken | undefined;
  let minting: Promise<EksToken> | undefined;
  return async () => {
    if (current && now() - current.signedAtMs < refreshAfterMs) return current.token;
    minting ??= mint().finally(() => {
      minting = undefined;
    });
    current = await minting;
    return current.token;
  };
}

export const EKS_AUTH_PROVIDER = 'khrun-eks-token';

/**
 * A KubeConfig for an EKS cluster: endpoint and CA (base64 PEM, as DescribeCluster returns it) from
 * configuration, and a bearer token from tokenSource on every request, so a long run picks up fresh tokens.
 */
export function eksKubeConfig(opts: {
  clusterName: string;
  endpoint: string;
  caData: string;
  token: () => Promise<string>;
}): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: opts.clusterName,
        server: opts.endpoint.replace(/\/+$/, ''),
        caData: opts.caData,
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'khrun', authProvider: { name: EKS_AUTH_PROVIDER, config: {} } }],
    contexts: [{ name: opts.clusterName, cluster: opts.clusterName, user: 'khrun' }],
    currentContext: opts.clusterName,
  });
  kc.addAuthenticator({
    isAuthProvider: (user) => user?.authProvider?.name === EKS_AUTH_PROVIDER,
    async applyAuthentication(_user, requestOptions) {
      const headers = (requestOptions.headers ?? {}) as Record<string, string>;
      headers.Authorization = `Bearer ${await opts.token()}`;
      requestOptions.headers = headers;
    },
  });
  return kc;
}
