import { type ClusterAccess, clusterAccess } from './cluster-access.ts';
import { type FleetSettings, fleetSettings, nameList } from './clusters.ts';
import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';
import { httpUrl, required } from './values.ts';

/**
 * How a Lambda function reaches one cluster of its KHRUN_CLUSTERS. EKS: by name, its endpoint and CA read
 * with eks:DescribeCluster, a token minted from the function's role (lib/aws). With KUBECONFIG set (a
 * cluster outside EKS, the local clusters in tests): the kubeconfig's context of that name.
 */
export type FleetAccess =
  | { kind: 'kubeconfig'; path: string; context: string }
  | { kind: 'eks'; clusterName: string; region: string; eksEndpoint: string | undefined };

export interface FleetMember {
  name: string;
  access: FleetAccess;
}

/** The clusters a Lambda function serves, and how a fan-out over them is bounded. */
export interface LambdaFleet {
  members: FleetMember[];
  settings: FleetSettings;
}

/**
 * A cluster name as KHRUN_CLUSTERS and events carry it, and as it rides in report URLs: EKS's rule
 * (letters, digits, `-` and `_`, first a letter or digit), plus `.` for kubeconfig contexts; at most 100.
 */
const CLUSTER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function access(input: ConfigInput<Flags>, name: string): FleetAccess {
  const kubeconfig = setting(input, { env: ['KUBECONFIG'] }).text;
  if (kubeconfig) return { kind: 'kubeconfig', path: kubeconfig, context: name };
  return {
    kind: 'eks',
    clusterName: name,
    region: required(setting(input, { env: ['AWS_REGION', 'AWS_DEFAULT_REGION'] }), 'the AWS region'),
    eksEndpoint: httpUrl(setting(input, { env: ['KHRUN_EKS_ENDPOINT'] })),
  };
}

/** KHRUN_CLUSTERS as a list of checked names; undefined when unset (the function serves its one cluster). */
export function fleetNames(input: ConfigInput<Flags>): string[] | undefined {
  const s = setting(input, { env: ['KHRUN_CLUSTERS'] });
  if (s.text === undefined) return undefined;
  const names = nameList(s.text, s.source, 'cluster');
  const bad = names.find((n) => !CLUSTER_NAME.test(n));
  if (bad !== undefined) {
    throw new ConfigError({
      setting: s.source,
      value: s.text,
      problem: `names ${JSON.stringify(bad)}, which is not a cluster name khrun can carry in events and report URLs`,
      remedy:
        'use EKS cluster names (letters, digits, "-", "_"; "." too for kubeconfig contexts), at most 100 characters',
    });
  }
  return names;
}

/**
 * KHRUN_CLUSTERS=a,b: the function serves these clusters (EKS names, else contexts of KUBECONFIG), each
 * within KHRUN_CLUSTER_TIMEOUT (default defaultDeadlineMs), KHRUN_CLUSTER_CONCURRENCY at once.
 * Undefined when unset: the function serves its one cluster (cluster-access.ts), as ever.
 */
export function lambdaFleet(input: ConfigInput<Flags>, defaultDeadlineMs: number): LambdaFleet | undefined {
  const names = fleetNames(input);
  if (!names) return undefined;
  return {
    members: names.map((name) => ({ name, access: access(input, name) })),
    settings: fleetSettings(input, defaultDeadlineMs),
  };
}

/**
 * The cluster an event or request names (`source`, for messages): one of KHRUN_CLUSTERS, or a ConfigError
 * (a function never reaches a cluster it was not configured for, whatever its caller says).
 */
export function memberNamed(input: ConfigInput<Flags>, name: string, source: string): FleetMember {
  const names = fleetNames(input);
  if (!names) {
    throw new ConfigError({
      setting: source,
      value: name,
      problem: 'names a cluster, but this function serves one cluster only (KHRUN_CLUSTERS is not set)',
      remedy: 'leave the cluster out, or set KHRUN_CLUSTERS on the function to the clusters it serves',
    });
  }
  if (!names.includes(name)) {
    throw new ConfigError({
      setting: source,
      value: name,
      problem: `is not one of the function's clusters (KHRUN_CLUSTERS: ${names.join(', ')})`,
      remedy: 'name one of them, or add the cluster to KHRUN_CLUSTERS (docs/multi-cluster.md)',
    });
  }
  return { name, access: access(input, name) };
}

/** A Lambda's one cluster (cluster), or the clusters of its KHRUN_CLUSTERS (fleet). */
export type LambdaClusters =
  | { cluster: ClusterAccess; fleet?: undefined }
  | { cluster?: undefined; fleet: LambdaFleet };

/** KHRUN_CLUSTERS' clusters, else the function's one cluster (cluster-access.ts), as ever. */
export function lambdaClusters(input: ConfigInput<Flags>, defaultDeadlineMs: number): LambdaClusters {
  const fleet = lambdaFleet(input, defaultDeadlineMs);
  return fleet ? { fleet } : { cluster: clusterAccess(input) };
}
