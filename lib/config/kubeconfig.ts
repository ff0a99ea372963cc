import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig, UnknownContextError } from '../kube/load-config.ts';
import { ConfigError } from './config-error.ts';
import { type ConfigInput, setting } from './setting.ts';

export interface KubeconfigFlags {
  kubeconfig?: string;
  context?: string;
  [flag: string]: string | boolean | undefined;
}

/** The cluster a CLI command talks to, and the kubeconfig files it came from. */
export interface CliKube {
  kc: KubeConfig;
  /** The files read (for settings kept beside the cluster, such as the local cluster's report host). */
  files: string[];
  /** The current context's namespace, when it names one. */
  contextNamespace: string | undefined;
}

/**
 * kubectl's choice of cluster: --kubeconfig, else KUBECONFIG (a list of paths), else ~/.kube/config,
 * else in-cluster; --context picks the context. A file that cannot be read, an unknown context or no
 * cluster at all is a ConfigError naming the flag or variable.
 */
export function cliKube(input: ConfigInput<KubeconfigFlags>): CliKube {
  const path = setting(input, { flags: ['kubeconfig'], env: ['KUBECONFIG'] });
  const context = setting(input, { flags: ['context'] });
  let kc: KubeConfig;
  try {
    kc = loadKubeConfig({ kubeconfig: path.text, context: context.text });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof UnknownContextError) {
      throw new ConfigError({
        setting: context.source,
        value: context.text,
        problem: message,
        remedy: 'pick one of `kubectl config get-contexts`',
        cause: error,
      });
    }
    throw new ConfigError({
      setting: path.text === undefined ? 'KUBECONFIG' : path.source,
      value: path.text,
      problem: path.text === undefined ? message : `cannot be used: ${message}`,
      remedy:
        'point --kubeconfig or KUBECONFIG at a kubeconfig file (for the local cluster: npx khrun local up, ' +
        'then KUBECONFIG=.khrun/local/kubeconfig)',
      cause: error,
    });
  }
  const home = input.env.HOME;
  const files = path.text
    ? path.text.split(delimiter).filter(Boolean)
    : home
      ? [join(home, '.kube', 'config')]
      : [];
  return { kc, files, contextNamespace: kc.getContextObject(kc.getCurrentContext())?.namespace || undefined };
}
