import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';
import { required } from './values.ts';

/**
 * How a Lambda function reaches the cluster. EKS: the cluster's name, endpoint and CA (base64 PEM, as
 * DescribeCluster returns it), with a token lib/aws mints from the function's role. Anything else (a
 * non-EKS cluster, the local cluster in tests): a kubeconfig file.
 */
export type ClusterAccess =
  | { kind: 'kubeconfig'; path: string }
  | { kind: 'eks'; clusterName: string; endpoint: string; caData: string; region: string };

/** KUBECONFIG when set, else EKS_CLUSTER_NAME, EKS_ENDPOINT, EKS_CA_DATA and AWS_REGION, all required. */
export function clusterAccess(input: ConfigInput<Flags>): ClusterAccess {
  const kubeconfig = setting(input, { env: ['KUBECONFIG'] }).text;
  if (kubeconfig) return { kind: 'kubeconfig', path: kubeconfig };
  const need = (name: string, what: string) => {
    const s = setting(input, { env: [name] });
    if (s.text !== undefined) return s.text;
    throw new ConfigError({
      setting: name,
      problem: `${what} is required to reach an EKS cluster`,
      remedy: 'deploy with the clusterName, eksEndpoint and eksCaData parameters, or set KUBECONFIG',
    });
  };
  const clusterName = need('EKS_CLUSTER_NAME', 'the cluster name');
  const endpoint = need('EKS_ENDPOINT', 'the API server endpoint');
  if (!/^https:\/\/[^/\s]+/.test(endpoint)) {
    throw new ConfigError({
      setting: 'EKS_ENDPOINT',
      value: endpoint,
      problem: 'must be the https URL of the API server',
      remedy: 'use `aws eks describe-cluster --query cluster.endpoint`',
    });
  }
  return {
    kind: 'eks',
    clusterName,
    endpoint,
    caData: need('EKS_CA_DATA', 'the cluster CA'),
    region: required(setting(input, { env: ['AWS_REGION', 'AWS_DEFAULT_REGION'] }), 'the AWS region'),
  };
}
