import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterAccess } from '../config/cluster-access.ts';
import { loadKubeConfig } from '../kube/load-config.ts';
import { eksKubeConfig, eksTokenSource, mintEksToken } from './eks-token.ts';

/**
 * The KubeConfig a Lambda function reaches its cluster with (the access comes validated from lib/config).
 * EKS: a token minted from the function's role, minted again before it expires. Otherwise the kubeconfig file.
 */
export function lambdaKubeConfig(access: ClusterAccess): KubeConfig {
  if (access.kind === 'kubeconfig') return loadKubeConfig({ kubeconfig: access.path });
  const { clusterName, region } = access;
  const credentials = defaultProvider();
  return eksKubeConfig({
    clusterName,
    endpoint: access.endpoint,
    caData: access.caData,
    token: eksTokenSource(() => mintEksToken({ clusterName, region, credentials })),
  });
}
