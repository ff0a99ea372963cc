import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { MetricsOptions } from '../status/error-label.ts';
import {
  asksForFleet,
  cliFleet,
  type FleetCluster,
  type FleetFlags,
  type FleetSettings,
  fleetSettings,
} from './clusters.ts';
import { identity, logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { type LambdaClusters, lambdaClusters } from './lambda-fleet.ts';
import { metricsOptions } from './metrics-options.ts';
import {
  checkNamespace,
  namespaceScope,
  namespacesScope,
  objectName,
  oneNamespaceSetting,
} from './namespaces.ts';
import { type ConfigInput, type Env, type Flags, flagSet, NO_FLAGS, setting } from './setting.ts';
import { oneOf } from './values.ts';

/** Color only on a terminal, and never with NO_COLOR (no-color.org). */
function colorOn(input: ConfigInput<Flags>, terminal: boolean): boolean {
  return terminal && setting(input, { env: ['NO_COLOR'] }).text === undefined;
}

export interface StatusFlags extends FleetFlags {
  namespace?: string;
  'all-namespaces'?: boolean;
  output?: string;
  watch?: boolean;
}

/** Each cluster's deadline in a fleet status, unless set: a status board answers within seconds. */
export const FLEET_STATUS_DEADLINE_MS = 15_000;

/** Several clusters (`--context A,B`, `--all-contexts`), each read on its own, side by side. */
export interface StatusFleet {
  clusters: FleetCluster[];
  settings: FleetSettings;
}

export type StatusOptions = StatusCommon &
  ({ kc: KubeConfig; fleet?: undefined } | { kc?: undefined; fleet: StatusFleet });

interface StatusCommon {
  /** Only these namespaces; empty: all. */
  namespaces: string[];
  output: 'table' | 'wide' | 'json' | 'yaml';
  /** After the table, follow the khstates and print each change (-w). */
  watch: boolean;
  color: boolean;
  currentMaster: string;
}

/**
 * `khrun status [-n A,B | -A] [-o wide|json|yaml] [-w]`: every namespace unless -n names some (kubectl
 * would take the context's namespace; a status board shows all). `terminal`: stdout is a terminal.
 */
export function statusOptions(input: ConfigInput<StatusFlags> & { terminal: boolean }): StatusOptions {
  const scope = namespacesScope(input);
  const output = oneOf(setting(input, { flags: ['output'] }), ['table', 'wide', 'json', 'yaml'], 'table');
  const common: StatusCommon = {
    namespaces: scope === 'all' ? [] : scope.namespaces,
    output,
    watch: flagSet(input, 'watch'),
    color: colorOn(input, input.terminal),
    currentMaster: identity(input, 'khrun'),
  };
  if (common.watch && asksForFleet(input)) {
    throw new ConfigError({
      setting: '--watch',
      problem: 'follows one cluster',
      remedy: 'give one --context to follow it, or leave out -w for the table of every cluster',
    });
  }
  const clusters = cliFleet(input);
  if (!clusters) return { ...common, kc: cliKube(input).kc };
  return { ...common, fleet: { clusters, settings: fleetSettings(input, FLEET_STATUS_DEADLINE_MS) } };
}

export interface DescribeFlags extends KubeconfigFlags {
  namespace?: string;
  /** Refused: describe shows one check. */
  'all-namespaces'?: boolean;
}

export interface DescribeOptions {
  kc: KubeConfig;
  namespace: string;
  name: string;
  color: boolean;
}

/** `khrun describe CHECK [-n NS]`: the check namespace as `khrun run` finds it. */
export function describeOptions(
  input: ConfigInput<DescribeFlags> & { positionals: readonly string[]; terminal: boolean },
): DescribeOptions {
  const [name, ...extra] = input.positionals;
  if (name === undefined || extra.length > 0) {
    throw new ConfigError({
      setting: 'CHECK',
      value: input.positionals.join(' ') || undefined,
      problem: 'describe takes exactly one check name',
      remedy: 'run khrun describe CHECK [--namespace NS]',
    });
  }
  const namespace = oneNamespaceSetting(input, 'describe shows one check in one namespace');
  objectName(name, 'CHECK', 'khcheck');
  const kube = cliKube(input);
  return {
    kc: kube.kc,
    namespace: checkNamespace(namespace, kube.contextNamespace),
    name,
    color: colorOn(input, input.terminal),
  };
}

export type LambdaStatusOptions = LambdaClusters & {
  scope: NamespaceScope;
  metrics: MetricsOptions;
  logLevel: LogLevel;
};

/** The status Lambda: v2's status JSON, the page and the metrics behind a function URL. */
export function lambdaStatusOptions(input: { env: Env }): LambdaStatusOptions {
  const config: ConfigInput<Flags> = { flags: {}, env: input.env, flagLabel: NO_FLAGS };
  return {
    scope: namespaceScope(setting(config, { env: ['KHRUN_NAMESPACES'] })),
    metrics: metricsOptions(config),
    logLevel: logLevel(config),
    // With KHRUN_CLUSTERS: each request reads every cluster, each within KHRUN_CLUSTER_TIMEOUT.
    ...lambdaClusters(config, FLEET_STATUS_DEADLINE_MS),
  };
}
