import type { NamespaceScope } from '../kube/scope.ts';
import { ConfigError } from './config-error.ts';
import { type ConfigInput, type Flags, flagSet, type Setting, setting } from './setting.ts';

/**
 * Where khrun itself is installed when nothing says otherwise (infra/deploy): its own namespace, not
 * Kuberhealthy's, so that removing a Kuberhealthy (v3's manifests delete the namespace kuberhealthy) leaves
 * khrun running.
 */
export const DEFAULT_RUNNER_NAMESPACE = 'khrun';
/** The check namespace when no flag, variable or kubeconfig context names one (kubectl's default). */
export const DEFAULT_CHECK_NAMESPACE = 'default';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes namespace name (a DNS-1123 label), else a ConfigError naming where it came from. */
export function namespaceName(text: string, source: string): string {
  if (text.length <= 63 && DNS1123_LABEL.test(text)) return text;
  throw new ConfigError({
    setting: source,
    value: text,
    problem: 'is not a namespace name (lower-case letters, digits and "-", at most 63)',
    remedy: 'give a namespace such as kuberhealthy',
  });
}

/** An object name such as a khcheck's (a DNS-1123 subdomain). */
export function objectName(text: string, source: string, what: string): string {
  if (text.length <= 253 && DNS1123_SUBDOMAIN.test(text)) return text;
  throw new ConfigError({
    setting: source,
    value: text,
    problem: `is not a ${what} name (lower-case letters, digits, "-" and ".")`,
    remedy: `give the ${what}'s metadata.name`,
  });
}

/** A comma-separated list of namespaces; blanks dropped. */
export function namespaceList(s: Setting): string[] {
  const names = (s.text ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const bad = names.find((n) => n.length > 63 || !DNS1123_LABEL.test(n));
  if (bad !== undefined) {
    throw new ConfigError({
      setting: s.source,
      value: s.text,
      problem: `${JSON.stringify(bad)} is not a namespace name (lower-case letters, digits and "-", at most 63)`,
      remedy: 'give namespaces separated by commas, such as kuberhealthy,team-a',
    });
  }
  return names;
}

/** A list setting (`-n A,B`, KHRUN_NAMESPACES): those namespaces; unset or empty means every namespace. */
export function namespaceScope(s: Setting): NamespaceScope {
  const list = namespaceList(s);
  return list.length ? { namespaces: list } : 'all';
}

/**
 * The scope of a command over many checks (status, tick, sync, serve), kubectl's way: -n/--namespace A,B
 * (or the old --namespaces), else -A/--all-namespaces, else the variables in `env` (KHRUN_NAMESPACES), else
 * every namespace. -n and -A together contradict each other: a ConfigError rather than a silent choice.
 */
export function namespacesScope(input: ConfigInput<Flags>, env: readonly string[] = []): NamespaceScope {
  const flag = setting(input, { flags: ['namespace', 'namespaces'] });
  if (flagSet(input, 'all-namespaces')) {
    if (flag.text === undefined) return 'all';
    throw new ConfigError({
      setting: '--all-namespaces',
      problem: `contradicts ${flag.source}=${JSON.stringify(flag.text)}`,
      remedy: 'give -n NS[,NS] for some namespaces or -A for all, not both',
    });
  }
  return namespaceScope(setting(input, { flags: ['namespace', 'namespaces'], env }));
}

/** -n A,B (or the old --namespaces), -A, else KHRUN_NAMESPACES, else all; a Lambda has only the variable. */
export const khrunNamespaces = (input: ConfigInput<Flags>): NamespaceScope =>
  namespacesScope(input, ['KHRUN_NAMESPACES']);

/**
 * The namespace setting of a command about one check (run, describe): -n NS, else CHECK_NAMESPACE. A
 * comma list or -A is a ConfigError that says why (`why`: "a run is one check in one namespace").
 */
export function oneNamespaceSetting(input: ConfigInput<Flags>, why: string): Setting {
  if (flagSet(input, 'all-namespaces')) {
    throw new ConfigError({
      setting: '--all-namespaces',
      problem: why,
      remedy: 'give -n NS (else CHECK_NAMESPACE, else the kubeconfig context namespace)',
    });
  }
  const s = setting(input, { flags: ['namespace'], env: CHECK_NAMESPACE_ENV });
  if (s.text?.includes(',')) {
    throw new ConfigError({
      setting: s.source,
      value: s.text,
      problem: `${why}, not a list`,
      remedy: `give one namespace, such as -n ${s.text.split(',')[0]?.trim() || 'NS'}`,
    });
  }
  return s;
}

/**
 * The namespace of the check to run: the flag (or event field), else CHECK_NAMESPACE (both in the setting),
 * else the kubeconfig context's namespace (the CLI's kubectl habit; a Lambda has none), else `default`.
 */
export function checkNamespace(s: Setting, contextNamespace?: string): string {
  if (s.text !== undefined) return namespaceName(s.text, s.source);
  if (contextNamespace) return namespaceName(contextNamespace, 'the kubeconfig context namespace');
  return DEFAULT_CHECK_NAMESPACE;
}

/**
 * Where khrun itself is installed, where tick and sync read the `khrun-runner` PodTemplate and the tick
 * creates Jobs: `--runner-namespace` / KHRUN_NAMESPACE, else POD_NAMESPACE (the downward API, in a pod),
 * else `khrun`. Never the kubeconfig context's namespace: that is where a person works, not where
 * khrun is installed (`default` on the local cluster).
 */
export function runnerNamespace(s: Setting): string {
  return s.text === undefined ? DEFAULT_RUNNER_NAMESPACE : namespaceName(s.text, s.source);
}

/** The setting names for runnerNamespace, in order (the flags are per command). */
export const RUNNER_NAMESPACE_ENV = ['KHRUN_NAMESPACE', 'POD_NAMESPACE'] as const;
export const CHECK_NAMESPACE_ENV = ['CHECK_NAMESPACE'] as const;
