import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseGoDuration } from '../core/duration.ts';
import { loadKubeConfig } from '../kube/load-config.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { eksKubeConfig, eksTokenSource, mintEksToken } from './eks-token.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** A configuration problem: the handler fails with it on every invocation until the deployment is fixed. */
export class LambdaConfigError extends Error {
  override readonly name = 'LambdaConfigError';
}

function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new LambdaConfigError(`environment variable ${name} is not set`);
  return value;
}

/**
 * How a Lambda function reaches the cluster, from its environment (passed in: lib never reads
 * process.env). EKS: EKS_CLUSTER_NAME, EKS_ENDPOINT and EKS_CA_DATA (base64 PEM, as DescribeCluster
 * returns it) with a token minted from the function's role and refreshed before it expires. Anything else
 * (a local cluster in tests, a non-EKS cluster): KUBECONFIG pointing at a kubeconfig file.
 */
export function lambdaKubeConfig(env: Env): KubeConfig {
  if (env.KUBECONFIG) return loadKubeConfig({ kubeconfig: env.KUBECONFIG });
  const clusterName = required(env, 'EKS_CLUSTER_NAME');
  const region = required(env, 'AWS_REGION');
  const credentials = defaultProvider();
  return eksKubeConfig({
    clusterName,
    endpoint: required(env, 'EKS_ENDPOINT'),
    caData: required(env, 'EKS_CA_DATA'),
    token: eksTokenSource(() => mintEksToken({ clusterName, region, credentials })),
  });
}

export function lambdaScope(env: Env): NamespaceScope {
  const list = (env.KHRUN_NAMESPACES ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return list.length ? { namespaces: list } : 'all';
}

/** A non-negative number of seconds from the environment, in ms. */
export function secondsMs(env: Env, name: string, fallbackSeconds: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallbackSeconds * 1000;
  const n = Number(text);
  if (!(n >= 0)) throw new LambdaConfigError(`${name} must be a number of seconds, not "${text}"`);
  return n * 1000;
}

/** A Go duration (such as 1m or 0s) from the environment, in ms; zero is allowed. */
export function durationMs(env: Env, name: string, fallbackMs: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallbackMs;
  const parsed = parseGoDuration(text);
  if (!parsed.ok || parsed.ns < 0)
    throw new LambdaConfigError(`${name} must be a Go duration such as 1m, not "${text}"`);
  return parsed.ns / 1e6;
}
