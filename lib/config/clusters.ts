import type { KubeConfig } from '@kubernetes/client-node';
import { kubeconfigContexts } from '../kube/load-config.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { type ConfigInput, type Flags, flagSet, setting } from './setting.ts';
import { goDurationMs, wholeInRange } from './values.ts';

/** One cluster of a fleet: its name (the kubeconfig context's, an EKS cluster's) and how it is reached. */
export interface FleetCluster {
  name: string;
  kc: KubeConfig;
}

/** How a fan-out over clusters is bounded (core/fan-out.ts). */
export interface FleetSettings {
  /** The most clusters worked on at once (--cluster-concurrency, KHRUN_CLUSTER_CONCURRENCY; default 8). */
  concurrency: number;
  /** Each cluster's own deadline (--cluster-timeout, KHRUN_CLUSTER_TIMEOUT). */
  deadlineMs: number;
}

export interface FleetFlags extends KubeconfigFlags {
  'all-contexts'?: boolean;
  'cluster-timeout'?: string;
  'cluster-concurrency'?: string;
}

export const DEFAULT_CLUSTER_CONCURRENCY = 8;
/** More clusters at once than this only queue on two cores. */
const MAX_CLUSTER_CONCURRENCY = 64;

/**
 * Whether the command line asks for several clusters: --all-contexts, or a comma in --context. A fleet's
 * output says which cluster each line is from (even a list of one: the shape depends on how it was asked
 * for, not on how many clusters there are); a single --context keeps the one-cluster output as it is.
 */
export function asksForFleet(input: ConfigInput<FleetFlags>): boolean {
  return flagSet(input, 'all-contexts') || (input.flags.context ?? '').includes(',');
}

/** The fan-out's bounds: concurrency, and each cluster's deadline (defaultDeadlineMs unless set). */
export function fleetSettings(input: ConfigInput<Flags>, defaultDeadlineMs: number): FleetSettings {
  return {
    concurrency: wholeInRange(
      setting(input, { flags: ['cluster-concurrency'], env: ['KHRUN_CLUSTER_CONCURRENCY'] }),
      {
        min: 1,
        max: MAX_CLUSTER_CONCURRENCY,
        defaultValue: DEFAULT_CLUSTER_CONCURRENCY,
        meaning: 'it is the most clusters worked on at once',
      },
    ),
    deadlineMs: goDurationMs(setting(input, { flags: ['cluster-timeout'], env: ['KHRUN_CLUSTER_TIMEOUT'] }), {
      defaultMs: defaultDeadlineMs,
    }),
  };
}

/**
 * A list of names, in order: comma-separated, blanks around names ignored; an empty name or one named
 * twice is a ConfigError for `source`.
 */
export function nameList(text: string, source: string, what: string): string[] {
  const names = text.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) {
    throw new ConfigError({
      setting: source,
      value: text,
      problem: `has an empty ${what} name`,
      remedy: `give ${what} names separated by commas, such as prod-eu,prod-us`,
    });
  }
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) {
    throw new ConfigError({
      setting: source,
      value: text,
      problem: `names ${what} ${twice} twice`,
      remedy: `name each ${what} once`,
    });
  }
  return names;
}

/**
 * The clusters of `--context A,B` or `--all-contexts` (kubectl's kubeconfig: --kubeconfig, else KUBECONFIG,
 * else ~/.kube/config), each loaded as `--context NAME` alone would load it, so a bad kubeconfig or an
 * unknown context is the same ConfigError. Undefined when the command line asks for one cluster.
 */
export function cliFleet(input: ConfigInput<FleetFlags>): FleetCluster[] | undefined {
  if (!asksForFleet(input)) return undefined;
  const all = flagSet(input, 'all-contexts');
  const context = input.flags.context;
  if (all && context !== undefined) {
    throw new ConfigError({
      setting: '--all-contexts',
      problem: 'and --context both choose the clusters',
      remedy: 'give --all-contexts for every context of the kubeconfig, or --context A,B for some',
    });
  }
  const names = all ? contextsOf(input) : nameList(context ?? '', '--context', 'context');
  return names.map((name) => ({
    name,
    kc: cliKube({ ...input, flags: { ...input.flags, context: name } }).kc,
  }));
}

/** Every context of the kubeconfig, in its order; none is a ConfigError (in a pod there is no kubeconfig). */
function contextsOf(input: ConfigInput<FleetFlags>): string[] {
  const path = setting(input, { flags: ['kubeconfig'], env: ['KUBECONFIG'] });
  let names: string[];
  try {
    names = kubeconfigContexts({ kubeconfig: path.text });
  } catch (error) {
    // A kubeconfig that cannot be read: cliKube says what is wrong and what to do, as for one cluster.
    cliKube(input);
    throw error;
  }
  if (names.length === 0) {
    throw new ConfigError({
      setting: '--all-contexts',
      problem: "found no kubeconfig context (in a pod, the cluster is the pod's own, with no kubeconfig)",
      remedy: `point ${path.places} at a kubeconfig with a context per cluster`,
    });
  }
  return names;
}
