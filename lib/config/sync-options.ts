import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { DEFAULT_CHECK_NAMESPACE, namespacesScope } from './namespaces.ts';
import { type RunnerTemplateRef, runnerTemplate } from './runner-template.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { oneOf } from './values.ts';

export interface SyncFlags extends KubeconfigFlags {
  namespace?: string;
  'all-namespaces'?: boolean;
  /** The old spelling of --namespace. */
  namespaces?: string;
  'dry-run'?: boolean;
  output?: string;
  'pod-template'?: string;
  'runner-namespace'?: string;
  'template-namespace'?: string;
}

/**
 * Where sync reads the khchecks: the cluster, or files (-f, --dry-run only: offline, no kubeconfig read).
 * `namespace` is the one given to a document that names none: -n when it is one namespace, else default.
 */
export type SyncSource =
  | { kind: 'cluster'; kc: KubeConfig }
  | { kind: 'files'; files: string[]; namespace: string };

export interface SyncOptions {
  source: SyncSource;
  scope: NamespaceScope;
  template: RunnerTemplateRef;
  dryRun: boolean;
  output: 'text' | 'yaml' | 'json';
  logLevel: LogLevel;
}

/**
 * `khrun sync`: one CronJob per khcheck, each made from the khrun-runner PodTemplate. `files`: the -f
 * values in order (the CLI collects the repeated flag); with them it renders offline and needs --dry-run.
 */
export function syncOptions(input: ConfigInput<SyncFlags> & { files?: readonly string[] }): SyncOptions {
  const scope = namespacesScope(input, ['KHRUN_NAMESPACES']);
  const template = runnerTemplate(input, 'template-namespace');
  const output = oneOf(setting(input, { flags: ['output'] }), ['text', 'yaml', 'json'], 'text');
  const level = logLevel(input);
  const dryRun = flagSet(input, 'dry-run');
  const files = input.files ?? [];
  if (files.length > 0 && !dryRun)
    throw new ConfigError({
      setting: '--filename',
      problem:
        'renders the CronJobs of khcheck files offline, and sync applies only what it reads from the cluster',
      remedy: 'add --dry-run to see them, or apply the khchecks (kubectl apply -f) and run khrun sync',
    });
  if (files.filter((f) => f === '-').length > 1)
    throw new ConfigError({
      setting: '--filename',
      value: '-',
      problem: 'stdin can be read once',
      remedy: 'give -f - once',
    });
  const source: SyncSource =
    files.length > 0
      ? {
          kind: 'files',
          files: [...files],
          namespace:
            scope !== 'all' && scope.namespaces.length === 1
              ? (scope.namespaces[0] ?? DEFAULT_CHECK_NAMESPACE)
              : DEFAULT_CHECK_NAMESPACE,
        }
      : { kind: 'cluster', kc: cliKube(input).kc };
  return { source, scope, template, dryRun, output, logLevel: level };
}
