import { readFileSync } from 'node:fs';
import { delimiter, dirname } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { load as loadYaml, YAMLException } from 'js-yaml';
import { KubeconfigError, KubeconfigProblem } from './kubeconfig-error.ts';

/** The --context asked for is not in the kubeconfig. */
export class UnknownContextError extends Error {
  override readonly name = 'UnknownContextError';
}

/**
 * kubectl's order: the given kubeconfig (a path, or a KUBECONFIG-style list of paths merged as kubectl
 * merges them; the caller passes $KUBECONFIG), else ~/.kube/config, else the in-cluster ServiceAccount.
 * A file that is missing, unreadable, not YAML or empty, or a result without clusters, contexts or a
 * current context is a KubeconfigError saying which; an unknown --context is an UnknownContextError.
 */
export function loadKubeConfig(opts: { kubeconfig?: string; context?: string }): KubeConfig {
  const [first, ...more] = (opts.kubeconfig ?? '').split(delimiter).filter(Boolean);
  const kc = loadFiles(first, more);
  const missing = [
    kc.clusters.length === 0 && 'clusters',
    kc.contexts.length === 0 && 'contexts',
    !opts.context && !kc.currentContext && 'current-context',
  ].filter((m): m is string => typeof m === 'string');
  if (missing.length > 0) {
    const problem =
      missing[0] === 'clusters'
        ? KubeconfigProblem.NoClusters
        : missing[0] === 'contexts'
          ? KubeconfigProblem.NoContexts
          : KubeconfigProblem.NoCurrentContext;
    const names = kc.contexts.map((c) => c.name);
    const among =
      problem === KubeconfigProblem.NoCurrentContext ? ` (its contexts: ${names.join(', ')})` : '';
    throw new KubeconfigError({
      problem,
      file: more.length === 0 ? first : undefined,
      detail: `has no ${missing.join(', ').replace(/, ([^,]*)$/, ' or $1')}${among}`,
    });
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context))
      throw new UnknownContextError(`the kubeconfig has no context "${opts.context}"`);
    kc.setCurrentContext(opts.context);
  }
  const context = kc.getContextObject(kc.currentContext);
  if (!context) {
    throw new KubeconfigError({
      problem: KubeconfigProblem.UnknownCurrentContext,
      file: more.length === 0 ? first : undefined,
      detail: `names current-context "${kc.currentContext}", which is not among its contexts (${kc.contexts.map((c) => c.name).join(', ')})`,
    });
  }
  const cluster = kc.getCluster(context.cluster);
  if (!cluster) {
    throw new KubeconfigError({
      problem: KubeconfigProblem.UnknownCluster,
      file: more.length === 0 ? first : undefined,
      detail: `has context "${context.name}" naming cluster "${context.cluster}", which is not among its clusters`,
    });
  }
  if (cluster.server === 'http://localhost:8080') {
    throw new Error('no Kubernetes cluster configured (no kubeconfig with a cluster, not in a pod)');
  }
  return kc;
}

/**
 * The names of the kubeconfig's contexts, in its order (kubectl's files, as loadKubeConfig reads them),
 * whether or not it has a current context: `--all-contexts`. A file that cannot be used is a
 * KubeconfigError, as for loadKubeConfig.
 */
export function kubeconfigContexts(opts: { kubeconfig?: string }): string[] {
  const [first, ...more] = (opts.kubeconfig ?? '').split(delimiter).filter(Boolean);
  return loadFiles(first, more).contexts.map((c) => c.name);
}

function loadFiles(first: string | undefined, more: readonly string[]): KubeConfig {
  if (first === undefined) {
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return kc;
  }
  const kc = loadFile(first);
  for (const file of more) kc.mergeConfig(loadFile(file));
  return kc;
}

/**
 * One kubeconfig file, read once (it may be a pipe: `--kubeconfig <(aws eks ...)`), with its relative
 * certificate paths taken from its directory, as client-node's loadFromFile does.
 */
function loadFile(file: string): KubeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new KubeconfigError({
      problem: code === 'ENOENT' ? KubeconfigProblem.Missing : KubeconfigProblem.Unreadable,
      file,
      detail:
        code === 'ENOENT'
          ? 'does not exist'
          : code === 'EISDIR'
            ? 'is a directory'
            : code === 'EACCES'
              ? 'cannot be read: permission denied'
              : `cannot be read: ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    });
  }
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const at = error.mark ? ` (line ${error.mark.line + 1}, column ${error.mark.column + 1})` : '';
    throw new KubeconfigError({
      problem: KubeconfigProblem.NotYaml,
      file,
      detail: `is not YAML: ${error.reason}${at}`,
      cause: error,
    });
  }
  if (doc === undefined || doc === null)
    throw new KubeconfigError({ problem: KubeconfigProblem.Empty, file, detail: 'is empty' });
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new KubeconfigError({
      problem: KubeconfigProblem.NotAKubeconfig,
      file,
      detail: `is not a kubeconfig: YAML, but ${Array.isArray(doc) ? 'a list' : `a ${typeof doc}`}, not a mapping with clusters, users and contexts`,
    });
  }
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new KubeconfigError({
      problem: KubeconfigProblem.Invalid,
      file,
      detail: `is not a valid kubeconfig: ${message}`,
      cause: error,
    });
  }
  kc.makePathsAbsolute(dirname(file));
  return kc;
}
