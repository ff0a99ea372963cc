import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeconfigError, KubeconfigProblem } from '../kube/kubeconfig-error.ts';
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

const POINT_ELSEWHERE =
  'point --kubeconfig or KUBECONFIG at a kubeconfig file (kubectl config view --raw prints the one kubectl ' +
  'uses; for the local cluster: npx khrun local up, then KUBECONFIG=.khrun/local/kubeconfig)';

/** What to do about each problem; FILE is the kubeconfig at fault, for the kubectl commands that fix it. */
const REMEDIES: Readonly<Record<KubeconfigProblem, string>> = {
  [KubeconfigProblem.Missing]: `check the path, or ${POINT_ELSEWHERE}`,
  [KubeconfigProblem.Unreadable]: `check the path and its permissions, or ${POINT_ELSEWHERE}`,
  [KubeconfigProblem.NotYaml]: `fix the file, or ${POINT_ELSEWHERE}`,
  [KubeconfigProblem.Empty]: `a kubeconfig names clusters, users, contexts and a current-context: ${POINT_ELSEWHERE}`,
  [KubeconfigProblem.NotAKubeconfig]: POINT_ELSEWHERE,
  [KubeconfigProblem.Invalid]: `fix the entry named, or ${POINT_ELSEWHERE}`,
  [KubeconfigProblem.NoClusters]: `add one (kubectl config set-cluster NAME --server URL --kubeconfig FILE), or ${POINT_ELSEWHERE}`,
  [KubeconfigProblem.NoContexts]:
    'add one (kubectl config set-context NAME --cluster CLUSTER --user USER --kubeconfig FILE), or ' +
    POINT_ELSEWHERE,
  [KubeconfigProblem.NoCurrentContext]:
    'give --context NAME, or set one (kubectl config use-context NAME --kubeconfig FILE)',
  [KubeconfigProblem.UnknownCurrentContext]:
    'give --context NAME, or set an existing one (kubectl config use-context NAME --kubeconfig FILE)',
  [KubeconfigProblem.UnknownCluster]:
    'give --context with a context whose cluster is there, or add the cluster (kubectl config set-cluster ' +
    'NAME --server URL --kubeconfig FILE)',
};

/**
 * kubectl's choice of cluster: --kubeconfig, else KUBECONFIG (a list of paths), else ~/.kube/config,
 * else in-cluster; --context picks the context. A file that cannot be read or used (missing, not YAML,
 * empty, without clusters, contexts or a current context), an unknown context or no cluster at all is a
 * ConfigError naming the flag or variable, what is wrong and what to do.
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
    if (error instanceof KubeconfigError) {
      // One file: "the file is empty" (the value names it); a list: the file at fault, or the whole.
      const one = path.text !== undefined && path.text.split(delimiter).filter(Boolean).length === 1;
      const subject = error.file === undefined ? 'the kubeconfig' : one ? 'the file' : error.file;
      throw new ConfigError({
        setting: path.text === undefined ? 'KUBECONFIG' : path.source,
        value: path.text,
        problem: `cannot be used: ${subject} ${error.detail}`,
        remedy: REMEDIES[error.problem].replaceAll('FILE', error.file ?? 'FILE'),
        cause: error,
      });
    }
    throw new ConfigError({
      setting: path.text === undefined ? 'KUBECONFIG' : path.source,
      value: path.text,
      problem: path.text === undefined ? message : `cannot be used: ${message}`,
      remedy: POINT_ELSEWHERE,
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
