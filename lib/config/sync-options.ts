import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { logLevel } from './common.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { namespacesScope } from './namespaces.ts';
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

export interface SyncOptions {
  kc: KubeConfig;
  scope: NamespaceScope;
  template: RunnerTemplateRef;
  dryRun: boolean;
  output: 'text' | 'yaml' | 'json';
  logLevel: LogLevel;
}

/** `khrun sync`: one CronJob per khcheck, each made from the khrun-runner PodTemplate. */
export function syncOptions(input: ConfigInput<SyncFlags>): SyncOptions {
  const scope = namespacesScope(input, ['KHRUN_NAMESPACES']);
  const template = runnerTemplate(input, 'template-namespace');
  const output = oneOf(setting(input, { flags: ['output'] }), ['text', 'yaml', 'json'], 'text');
  const level = logLevel(input);
  return {
    kc: cliKube(input).kc,
    scope,
    template,
    dryRun: flagSet(input, 'dry-run'),
    output,
    logLevel: level,
  };
}
