import type { KubeConfig } from '@kubernetes/client-node';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import type { FleetAccess, FleetMember } from '../config/lambda-fleet.ts';
import type { Log } from '../core/log.ts';
import { type KubeClient, type KubeClientOptions, kubeClient } from '../kube/kube-client.ts';
import { loadKubeConfig } from '../kube/load-config.ts';
import { describeEksCluster } from './eks-describe.ts';
import { eksKubeConfig, eksTokenSource, mintEksToken } from './eks-token.ts';

/**
 * The KubeConfig of one cluster of a function's fleet. EKS: endpoint and CA from DescribeCluster, a token
 * minted in-process from the function's role for that cluster's name (and again before it expires).
 * Otherwise the kubeconfig's context of the cluster's name.
 */
export async function fleetKubeConfig(
  access: FleetAccess,
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider,
): Promise<KubeConfig> {
  if (access.kind === 'kubeconfig')
    return loadKubeConfig({ kubeconfig: access.path, context: access.context });
  const { clusterName, region } = access;
  const { endpoint, caData } = await describeEksCluster({
    clusterName,
    region,
    credentials,
    endpoint: access.eksEndpoint,
    signal: AbortSignal.timeout(10_000),
  });
  return eksKubeConfig({
    clusterName,
    endpoint,
    caData,
    token: eksTokenSource(() => mintEksToken({ clusterName, region, credentials })),
  });
}

/** A warm runtime's client objects, one per cluster of its fleet, made on first use. */
export interface FleetClients {
  /** The cluster's client object; one that could not be made is tried again at the next call. */
  get(member: FleetMember): Promise<KubeClient>;
}

/**
 * One client object per cluster name, kept while the runtime is warm (its clock and keep-alive agent
 * outlive an invocation), made by `make` (fleetKubeConfig, then kubeClient) the first time it is asked
 * for. A failed making is forgotten, so an outage at a cold start is not kept for the runtime's life.
 */
export function fleetClients(make: (member: FleetMember) => Promise<KubeClient>): FleetClients {
  const made = new Map<string, Promise<KubeClient>>();
  return {
    get(member) {
      let client = made.get(member.name);
      if (!client) {
        client = make(member);
        made.set(member.name, client);
        client.catch(() => made.delete(member.name));
      }
      return client;
    },
  };
}

/** fleetClients over fleetKubeConfig: each cluster's client object as kubeClient makes one (opts). */
export function lambdaFleetClients(
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider,
  opts: KubeClientOptions & { log?: Log } = {},
): FleetClients {
  return fleetClients(async (member) => kubeClient(await fleetKubeConfig(member.access, credentials), opts));
}
