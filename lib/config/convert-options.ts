import type { KubeConfig } from '@kubernetes/client-node';
import { CHECK_KINDS, type CheckKind, kindOfTypeName } from '../convert/kinds.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { checkNamespace, objectName } from './namespaces.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { oneOf } from './values.ts';

export interface ConvertFlags extends KubeconfigFlags {
  namespace?: string;
  'all-namespaces'?: boolean;
  output?: string;
  apply?: boolean;
  'accept-losses'?: boolean;
}

/** A resource named on the command line: every one of a kind (`khchecks`) or one (`khcheck/NAME`). */
export interface ConvertTarget {
  kind: CheckKind;
  name?: string;
}

export interface ConvertOptions {
  /** -f paths in order; `-` is stdin. */
  files: string[];
  targets: ConvertTarget[];
  /** Where targets are read: one namespace, or all (-A). */
  scope: { namespace: string } | 'all';
  output: 'yaml' | 'json';
  apply: boolean;
  acceptLosses: boolean;
  /**
   * The cluster, only when one is needed (targets or --apply): converting files needs no kubeconfig.
   * `namespace`: -n, else the kubeconfig context's, else default (for targets and for created resources
   * that name none).
   */
  kube: { kc: KubeConfig; namespace: string } | undefined;
}

const TYPES = (Object.keys(CHECK_KINDS) as CheckKind[]).map((k) => CHECK_KINDS[k].names[0]).join(', ');

/** `khcheck/NAME`, `khjobs`, `hc NAME` (kubectl's two spellings: TYPE/NAME, or TYPE then names). */
export function convertTargets(positionals: readonly string[]): ConvertTarget[] {
  const targets: ConvertTarget[] = [];
  let bareType: CheckKind | undefined;
  for (const word of positionals) {
    const [type = '', name, ...rest] = word.split('/');
    const kind = kindOfTypeName(type);
    if (kind !== undefined && name === undefined) {
      // `khcheck a b` names checks a and b; a type alone names every one of it.
      bareType = kind;
      targets.push({ kind });
      continue;
    }
    if (kind !== undefined && rest.length === 0 && name !== undefined) {
      targets.push({ kind, name: objectName(name, word, CHECK_KINDS[kind].kind) });
      bareType = undefined;
      continue;
    }
    if (bareType !== undefined && !word.includes('/')) {
      const last = targets[targets.length - 1];
      const name = objectName(word, word, CHECK_KINDS[bareType].kind);
      if (last?.kind === bareType && last.name === undefined) last.name = name;
      else targets.push({ kind: bareType, name });
      continue;
    }
    throw new ConfigError({
      setting: 'RESOURCE',
      value: word,
      problem: `is not a resource convert reads (${TYPES}, as TYPE, TYPE/NAME or TYPE NAME...)`,
      remedy: 'name khchecks, khjobs or healthchecks, or give files with -f FILE (- for stdin)',
    });
  }
  return targets;
}

/**
 * `khrun convert [-f FILE]... [TYPE[/NAME]]... [-n NS | -A] [-o yaml|json] [--apply [--accept-losses]]`.
 * `files`: the -f values in order (the CLI collects the repeated flag).
 */
export function convertOptions(
  input: ConfigInput<ConvertFlags> & { positionals: readonly string[]; files: readonly string[] },
): ConvertOptions {
  const targets = convertTargets(input.positionals);
  if (targets.length === 0 && input.files.length === 0)
    throw new ConfigError({
      setting: 'RESOURCE',
      problem: 'nothing to convert',
      remedy:
        'give files with -f FILE (- for stdin), or resources such as khcheck/NAME, khchecks -n NS or khjobs -A',
    });
  const all = flagSet(input, 'all-namespaces');
  if (all && targets.some((t) => t.name !== undefined))
    throw new ConfigError({
      setting: '--all-namespaces',
      problem: 'a resource named by its name is in one namespace',
      remedy: 'give -n NS with TYPE/NAME, or a type alone (khchecks -A)',
    });
  const ns = setting(input, { flags: ['namespace'] });
  if (all && ns.text !== undefined)
    throw new ConfigError({
      setting: '--all-namespaces',
      problem: 'contradicts --namespace',
      remedy: 'give -n NS for one namespace or -A for all, not both',
    });
  const apply = flagSet(input, 'apply');
  const acceptLosses = flagSet(input, 'accept-losses');
  if (acceptLosses && !apply)
    throw new ConfigError({
      setting: '--accept-losses',
      problem: 'only means something with --apply',
      remedy: 'add --apply, or leave it out (without --apply nothing is created)',
    });
  // Files alone are converted without a cluster, so a missing kubeconfig does not stop them.
  const kube = targets.length > 0 || apply ? cliKube(input) : undefined;
  const namespace = checkNamespace(ns, kube?.contextNamespace);
  return {
    files: [...input.files],
    targets,
    scope: all ? 'all' : { namespace },
    output: oneOf(setting(input, { flags: ['output'] }), ['yaml', 'json'], 'yaml'),
    apply,
    acceptLosses,
    kube: kube && { kc: kube.kc, namespace },
  };
}
