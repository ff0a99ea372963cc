import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

/** What a token-authenticated client needs of an EKS cluster: its API server and the CA that signed it. */
export interface EksEndpoint {
  /** https URL of the API server (DescribeCluster's cluster.endpoint). */
  endpoint: string;
  /** Base64 PEM (cluster.certificateAuthority.data). */
  caData: string;
}

/** DescribeCluster failed or answered something that is not a usable cluster; the message says which. */
export class EksDescribeError extends Error {
  override readonly name = 'EksDescribeError';
  constructor(
    readonly clusterName: string,
    message: string,
    readonly status?: number,
  ) {
    super(`EKS cluster ${clusterName}: ${message}`);
  }
}

/**
 * The endpoint and CA of an EKS cluster, from EKS's DescribeCluster (`GET /clusters/NAME`, SigV4, service
 * `eks`): what a function serving several clusters needs to reach each (eks:DescribeCluster on each
 * cluster's ARN). EKS's own API is called directly, as lambda-invoke.ts calls Lambda's, to keep the bundles
 * free of SDK clients. A cluster that is not ACTIVE, or has no endpoint or CA yet, is an EksDescribeError.
 */
export async function describeEksCluster(opts: {
  clusterName: string;
  region: string;
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** Another EKS API endpoint (tests); default https://eks.<region>.amazonaws.com. */
  endpoint?: string;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}): Promise<EksEndpoint> {
  const base = new URL(opts.endpoint ?? `https://eks.${opts.region}.amazonaws.com`);
  const path = `/clusters/${encodeURIComponent(opts.clusterName)}`;
  const signer = new SignatureV4({
    service: 'eks',
    region: opts.region,
    credentials: opts.credentials,
    sha256: Sha256,
  });
  const signed = await signer.sign(
    new HttpRequest({
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port ? Number(base.port) : undefined,
      method: 'GET',
      path,
      headers: { host: base.host, accept: 'application/json' },
    }),
  );
  const { host: _host, ...headers } = signed.headers;
  const res = await (opts.fetch ?? fetch)(new URL(path, base), { headers, signal: opts.signal });
  const text = await res.text();
  if (res.status !== 200) {
    throw new EksDescribeError(
      opts.clusterName,
      `DescribeCluster answered ${res.status}: ${text.slice(0, 300)}`,
      res.status,
    );
  }
  let cluster:
    | { status?: unknown; endpoint?: unknown; certificateAuthority?: { data?: unknown } }
    | undefined;
  try {
    cluster = (JSON.parse(text) as { cluster?: typeof cluster }).cluster;
  } catch {
    throw new EksDescribeError(opts.clusterName, `DescribeCluster answered no JSON: ${text.slice(0, 100)}`);
  }
  const endpoint = cluster?.endpoint;
  const caData = cluster?.certificateAuthority?.data;
  if (cluster?.status !== undefined && cluster.status !== 'ACTIVE')
    throw new EksDescribeError(opts.clusterName, `the cluster is ${String(cluster.status)}, not ACTIVE`);
  if (
    typeof endpoint !== 'string' ||
    !endpoint.startsWith('https://') ||
    typeof caData !== 'string' ||
    !caData
  )
    throw new EksDescribeError(opts.clusterName, 'DescribeCluster gave no https endpoint and CA');
  return { endpoint, caData };
}
