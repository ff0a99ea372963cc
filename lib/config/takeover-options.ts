import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import { logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { type ConfigInput, type Flags, flagSet, type Setting, setting } from './setting.ts';
import { bool, integer, oneOf, secondsMs } from './values.ts';

/**
 * Whether khrun runs checks a Kuberhealthy also runs: `--take-over` or KHRUN_TAKE_OVER=true (the chart's
 * `takeOver` value sets it). Off by default: khrun then refuses them (lib/takeover/ownership.ts).
 */
export function takeOverSetting(input: ConfigInput<Flags>): boolean {
  return flagSet(input, 'take-over') || bool(setting(input, { env: ['KHRUN_TAKE_OVER'] }), false);
}

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const NAME = '[a-z0-9]([-.a-z0-9]*[a-z0-9])?';

/**
 * The Kuberhealthy Deployment a command acts on, and where to look for it: --from/--to NAMESPACE/NAME, or
 * NAME with -n NAMESPACE; -n alone narrows the search to that namespace.
 */
function deploymentRef(s: Setting, namespace: string | undefined): { ref?: string; namespace?: string } {
  const bad = (problem: string) =>
    new ConfigError({
      setting: s.source,
      value: s.text,
      problem,
      remedy:
        'give one such as kuberhealthy/kuberhealthy, or -n kuberhealthy with its name (kubectl get deploy -A -l app=kuberhealthy)',
    });
  if (s.text === undefined) return namespace ? { namespace } : {};
  if (new RegExp(`^${DNS_LABEL}/${NAME}$`).test(s.text)) {
    if (namespace && !s.text.startsWith(`${namespace}/`))
      throw bad(`names a Deployment outside -n ${namespace}`);
    return { ref: s.text };
  }
  if (new RegExp(`^${NAME}$`).test(s.text)) {
    if (!namespace) throw bad('is a name without a namespace');
    return { ref: `${namespace}/${s.text}` };
  }
  throw bad('must name a Deployment as NAMESPACE/NAME');
}

/** -n: one namespace (a Kuberhealthy's); -A is refused, the command acts on one Kuberhealthy. */
function namespaceOf(input: ConfigInput<TakeoverFlags>): string | undefined {
  if (flagSet(input, 'all-namespaces')) {
    throw new ConfigError({
      setting: '--all-namespaces',
      problem: 'the command acts on one Kuberhealthy',
      remedy: 'give -n with its namespace, or --from/--to NAMESPACE/NAME, or neither to find the only one',
    });
  }
  return setting(input, { flags: ['namespace'] }).text;
}

export interface TakeoverFlags extends KubeconfigFlags {
  namespace?: string;
  'all-namespaces'?: boolean;
  from?: string;
  to?: string;
  replicas?: string;
  output?: string;
  'dry-run'?: boolean;
  yes?: boolean;
}

/** --dry-run (change nothing, print what would change) and --yes (go ahead without asking). */
export interface ConfirmSettings {
  dryRun: boolean;
  yes: boolean;
}

const confirmSettings = (input: ConfigInput<TakeoverFlags>): ConfirmSettings => ({
  dryRun: flagSet(input, 'dry-run'),
  yes: flagSet(input, 'yes'),
});

export interface TakeoverOptions extends ConfirmSettings {
  kc: KubeConfig;
  /** The Kuberhealthy Deployment (namespace/name); undefined: the only one found (in namespace, if set). */
  from?: string;
  namespace?: string;
  /** How long to wait for its pods to be gone: KHRUN_TAKEOVER_TIMEOUT_SECONDS, default 180 (v2's grace is 60 s). */
  podsGoneTimeoutMs: number;
  output: 'text' | 'json' | 'yaml';
  logLevel: LogLevel;
}

/** `khrun takeover`. */
export function takeoverOptions(input: ConfigInput<TakeoverFlags>): TakeoverOptions {
  const from = deploymentRef(setting(input, { flags: ['from'] }), namespaceOf(input));
  const podsGoneTimeoutMs = secondsMs(setting(input, { env: ['KHRUN_TAKEOVER_TIMEOUT_SECONDS'] }), {
    defaultSeconds: 180,
  });
  const output = oneOf(setting(input, { flags: ['output'] }), ['text', 'json', 'yaml'], 'text');
  const level = logLevel(input);
  return {
    kc: cliKube(input).kc,
    ...(from.ref ? { from: from.ref } : {}),
    ...(from.namespace ? { namespace: from.namespace } : {}),
    podsGoneTimeoutMs,
    output,
    logLevel: level,
    ...confirmSettings(input),
  };
}

export interface HandbackOptions extends ConfirmSettings {
  kc: KubeConfig;
  to?: string;
  namespace?: string;
  /** Replicas to restore; default: the count takeover recorded on the Deployment. */
  replicas?: number;
  output: 'text' | 'json' | 'yaml';
  logLevel: LogLevel;
}

/** `khrun handback`. */
export function handbackOptions(input: ConfigInput<TakeoverFlags>): HandbackOptions {
  const to = deploymentRef(setting(input, { flags: ['to'] }), namespaceOf(input));
  const replicas = integer(setting(input, { flags: ['replicas'] }), { min: 1, what: 'replicas' });
  const output = oneOf(setting(input, { flags: ['output'] }), ['text', 'json', 'yaml'], 'text');
  const level = logLevel(input);
  return {
    kc: cliKube(input).kc,
    ...(to.ref ? { to: to.ref } : {}),
    ...(to.namespace ? { namespace: to.namespace } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    output,
    logLevel: level,
    ...confirmSettings(input),
  };
}
