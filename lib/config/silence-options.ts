import type { KubeConfig } from '@kubernetes/client-node';
import type { KindName } from '../core/run-target.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { MAX_SILENCE_MS } from '../notify/silence.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { checkNamespace, namespacesScope, objectName, oneNamespaceSetting } from './namespaces.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { goDurationMs, oneOf, required } from './values.ts';

export interface SilenceFlags extends KubeconfigFlags {
  namespace?: string;
  'all-namespaces'?: boolean;
  selector?: string;
  for?: string;
  reason?: string;
  job?: boolean;
  healthcheck?: boolean;
  output?: string;
}

/** Which checks: one by name, or those a label selector picks in the namespaces. */
export type SilenceTargets =
  | { by: 'name'; namespace: string; name: string }
  | { by: 'selector'; selector: string; scope: NamespaceScope };

export interface SilenceOptions {
  kc: KubeConfig;
  action: 'silence' | 'unsilence';
  targets: SilenceTargets;
  /** --job or --healthcheck; undefined: khchecks (by name: else a HealthCheck of that name; by selector: and HealthChecks). */
  kind: KindName | undefined;
  /** silence: how long (--for). */
  forMs: number;
  reason: string;
  output: 'table' | 'json' | 'yaml';
}

const MAX_REASON_CHARS = 200;
const MAX_SELECTOR_CHARS = 1024;

/**
 * `khrun silence CHECK|-l SELECTOR [-n NS|-A] --for DURATION --reason TEXT [--job|--healthcheck]` and
 * `khrun unsilence CHECK|-l SELECTOR ...`: a check by name in one namespace (-n, else CHECK_NAMESPACE,
 * else the context's), or every check a label selector picks in -n NS[,NS] or -A.
 */
export function silenceOptions(
  input: ConfigInput<SilenceFlags> & { positionals: readonly string[]; action: 'silence' | 'unsilence' },
): SilenceOptions {
  const { action } = input;
  const selector = setting(input, { flags: ['selector'] });
  const [name, ...extra] = input.positionals;
  if (extra.length > 0 || (name === undefined) === (selector.text === undefined))
    throw new ConfigError({
      setting: 'CHECK',
      value: input.positionals.join(' ') || undefined,
      problem: `${action} takes one check name or -l SELECTOR, not ${name === undefined ? 'neither' : 'both'}`,
      remedy: `run khrun ${action} CHECK -n NS, or khrun ${action} -l team=payments -n NS`,
    });
  const job = flagSet(input, 'job');
  const healthcheck = flagSet(input, 'healthcheck');
  if (job && healthcheck)
    throw new ConfigError({
      setting: '--job',
      problem: 'contradicts --healthcheck: a name is one kind of check',
      remedy: 'give --job for khjobs or --healthcheck for HealthCheck, or neither for khchecks',
    });
  const kind: KindName | undefined = job ? 'khjob' : healthcheck ? 'healthcheck' : undefined;
  const kube = cliKube(input);
  let targets: SilenceTargets;
  if (name !== undefined) {
    objectName(
      name,
      'CHECK',
      kind === 'khjob' ? 'khjob' : kind === 'healthcheck' ? 'HealthCheck' : 'khcheck',
    );
    const ns = oneNamespaceSetting(
      input,
      `${action} CHECK names one check in one namespace (-l SELECTOR with -A for many)`,
    );
    targets = { by: 'name', name, namespace: checkNamespace(ns, kube.contextNamespace) };
  } else {
    const text = (selector.text ?? '').trim();
    if (text === '' || text.length > MAX_SELECTOR_CHARS)
      throw new ConfigError({
        setting: '--selector',
        value: selector.text,
        problem: text === '' ? 'is empty' : `is over ${MAX_SELECTOR_CHARS} characters`,
        remedy: 'give a label selector as kubectl takes it, e.g. -l team=payments,tier!=canary',
      });
    const scope = namespacesScope(input);
    // As kubectl: -A every namespace, -n these, else the context's namespace (else default).
    const all = scope === 'all' && !flagSet(input, 'all-namespaces');
    targets = {
      by: 'selector',
      selector: text,
      scope: all ? { namespaces: [kube.contextNamespace ?? 'default'] } : scope,
    };
  }
  let forMs = 0;
  let reason = '';
  if (action === 'silence') {
    const f = setting(input, { flags: ['for'] });
    required(f, 'how long the silence lasts');
    forMs = goDurationMs(f, { defaultMs: 0 });
    if (forMs < 60_000 || forMs > MAX_SILENCE_MS)
      throw new ConfigError({
        setting: '--for',
        value: f.text,
        problem: 'is not from 1m to 2160h (90 days)',
        remedy:
          'give a Go duration such as 2h or 30m; for good, set notify.khrun.dev/channels=none on the check instead',
      });
    reason = required(setting(input, { flags: ['reason'] }), 'why the check is silenced').trim();
    if (reason.length > MAX_REASON_CHARS)
      throw new ConfigError({
        setting: '--reason',
        problem: `is over ${MAX_REASON_CHARS} characters`,
        remedy: 'say it in a line (a ticket number, "db migration")',
      });
  }
  return {
    kc: kube.kc,
    action,
    targets,
    kind,
    forMs,
    reason,
    output: oneOf(setting(input, { flags: ['output'] }), ['table', 'json', 'yaml'], 'table'),
  };
}
