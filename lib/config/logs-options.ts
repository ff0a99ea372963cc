import type { KubeConfig } from '@kubernetes/client-node';
import type { KindName } from '../core/run-target.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { checkNamespace, objectName, oneNamespaceSetting } from './namespaces.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { integer } from './values.ts';

export interface LogsFlags extends KubeconfigFlags {
  namespace?: string;
  /** Refused: the logs of one check. */
  'all-namespaces'?: boolean;
  previous?: boolean;
  job?: boolean;
  healthcheck?: boolean;
  container?: string;
  tail?: string;
}

export interface LogsOptions {
  kc: KubeConfig;
  namespace: string;
  name: string;
  /** --job or --healthcheck; undefined: a khcheck's pods, else a HealthCheck's of that name. */
  kind: KindName | undefined;
  /** The run before the last one. */
  previous: boolean;
  container: string | undefined;
  /** Only the last lines (--tail N); undefined: the whole log. */
  tailLines: number | undefined;
}

/** `khrun logs CHECK [-n NS] [--previous] [--job|--healthcheck] [-c NAME] [--tail N]`. */
export function logsOptions(input: ConfigInput<LogsFlags> & { positionals: readonly string[] }): LogsOptions {
  const [name, ...extra] = input.positionals;
  if (name === undefined || extra.length > 0)
    throw new ConfigError({
      setting: 'CHECK',
      value: input.positionals.join(' ') || undefined,
      problem: 'logs takes exactly one check name',
      remedy: 'run khrun logs CHECK [--namespace NS] [--previous]',
    });
  const job = flagSet(input, 'job');
  const healthcheck = flagSet(input, 'healthcheck');
  if (job && healthcheck)
    throw new ConfigError({
      setting: '--job',
      problem: 'contradicts --healthcheck: a name is one kind of check',
      remedy: 'give --job for a khjob or --healthcheck for a HealthCheck, or neither for a khcheck',
    });
  const kind: KindName | undefined = job ? 'khjob' : healthcheck ? 'healthcheck' : undefined;
  objectName(name, 'CHECK', kind === 'khjob' ? 'khjob' : kind === 'healthcheck' ? 'HealthCheck' : 'khcheck');
  const namespace = oneNamespaceSetting(input, 'logs are of one check in one namespace');
  const container = setting(input, { flags: ['container'] });
  const tailLines = integer(setting(input, { flags: ['tail'] }), { min: 1, what: 'lines' });
  const kube = cliKube(input);
  return {
    kc: kube.kc,
    namespace: checkNamespace(namespace, kube.contextNamespace),
    name,
    kind,
    previous: flagSet(input, 'previous'),
    container:
      container.text === undefined ? undefined : objectName(container.text, container.source, 'container'),
    tailLines,
  };
}
