import type { Log } from '../core/log.ts';
import type { KindName } from '../core/run-target.ts';
import { statusCodeOf } from '../kube/errors.ts';
import { NAMESPACE_DEFAULTS_CONFIGMAP, type NotifyConfig } from './config.ts';
import {
  POLICY_ANNOTATION_PREFIX,
  type Policy,
  type PolicyProblem,
  parsePolicyLayer,
  policyAnnotations,
  problemText,
  resolvePolicy,
} from './policy.ts';

/**
 * Reads the namespace's defaults: the data of the ConfigMap khrun-notifications in it, null when there is
 * none. Throws what the API server answered otherwise (403 included).
 */
export type ReadNamespaceDefaults = (namespace: string) => Promise<Record<string, string> | null>;

/** The object a policy is resolved for: its kind, name and annotations. */
export interface PolicySubject {
  kind: KindName;
  namespace: string;
  name: string;
  annotations?: Readonly<Record<string, string>>;
}

export interface ResolvedPolicy {
  policy: Policy;
  /** Every problem met, as text naming the setting and what to write: logged and kept in the notify state. */
  problems: string[];
}

const NOUN: Record<KindName, string> = { khcheck: 'khcheck', khjob: 'khjob', healthcheck: 'HealthCheck' };
const MAX_PROBLEMS = 5;

/**
 * Resolves policies for one invocation: the namespace defaults are read at most once per namespace (and
 * only when a decision needs a policy: notify/transition.ts needsPolicy), the cluster's come from the
 * configuration, the check's from its annotations. A named channel the configuration does not define, or
 * does not allow in the check's namespace, is a problem and left out. Problems never throw.
 */
export function policySource(
  config: NotifyConfig,
  ports: { readDefaults?: ReadNamespaceDefaults; log: Log },
) {
  const namespaces = new Map<string, Promise<{ data: Record<string, string> | null; problem?: string }>>();
  const namespaceLayer = (namespace: string) => {
    let read = namespaces.get(namespace);
    if (!read) {
      read = readDefaultsOnce(namespace);
      namespaces.set(namespace, read);
    }
    return read;
  };
  async function readDefaultsOnce(namespace: string) {
    if (!config.namespaceDefaults || !ports.readDefaults) return { data: null };
    try {
      return { data: await ports.readDefaults(namespace) };
    } catch (error) {
      const code = statusCodeOf(error) ?? (error as { code?: unknown }).code;
      const problem =
        code === 403
          ? `ConfigMap ${namespace}/${NAMESPACE_DEFAULTS_CONFIGMAP} cannot be read (forbidden): grant the runner get on it, or set namespaceDefaults: false in the notification configuration`
          : `ConfigMap ${namespace}/${NAMESPACE_DEFAULTS_CONFIGMAP} cannot be read (${error instanceof Error ? error.message : String(error)}): the cluster's defaults apply`;
      ports.log.warn('namespace notification defaults not read', { namespace, problem });
      return { data: null, problem };
    }
  }

  return {
    /**
     * The policy from what needs no request (the check's annotations over the cluster's defaults): enough
     * to tell a silence or maintenance window when no decision needs the whole policy. Problems are left
     * to the next full resolve.
     */
    light: (subject: PolicySubject): Policy => lightPolicy(config, subject.annotations),
    async resolve(subject: PolicySubject): Promise<ResolvedPolicy> {
      const ns = await namespaceLayer(subject.namespace);
      const problems: PolicyProblem[] = [];
      const texts: string[] = ns.problem ? [ns.problem] : [];
      const nsLayer = ns.data
        ? parsePolicyLayer(
            ns.data,
            (k) => `key ${k} of ConfigMap ${subject.namespace}/${NAMESPACE_DEFAULTS_CONFIGMAP}`,
          )
        : { layer: {}, problems: [] };
      const own = parsePolicyLayer(
        policyAnnotations(subject.annotations),
        (k) =>
          `annotation ${POLICY_ANNOTATION_PREFIX}${k} on ${NOUN[subject.kind]} ${subject.namespace}/${subject.name}`,
      );
      problems.push(...nsLayer.problems, ...own.problems);
      const policy = resolvePolicy([config.defaults, nsLayer.layer, own.layer]);
      const usable = policy.channels.filter((name) => {
        const channel = config.channels.get(name);
        const why = !channel
          ? `which the notification configuration does not define (defined: ${[...config.channels.keys()].join(', ') || 'none'})`
          : channel.namespaces && !channel.namespaces.includes(subject.namespace)
            ? `which is not allowed in namespace ${subject.namespace} (its namespaces: ${channel.namespaces.join(', ')})`
            : undefined;
        if (why)
          texts.push(
            `channel ${name} of ${NOUN[subject.kind]} ${subject.namespace}/${subject.name} is named, ${why}: it is left out`,
          );
        return !why;
      });
      const all = [...problems.map(problemText), ...texts];
      return {
        policy: { ...policy, channels: usable },
        problems: all.slice(0, MAX_PROBLEMS).map((t) => t.slice(0, 300)),
      };
    },
  };
}

export type PolicySource = ReturnType<typeof policySource>;

/**
 * The policy from what needs no request: an object's annotations over the cluster's defaults (the
 * namespace's defaults left out). Enough to tell a silence; its problems are left to a full resolve.
 */
export function lightPolicy(
  config: Pick<NotifyConfig, 'defaults'>,
  annotations?: Readonly<Record<string, string>>,
): Policy {
  const own = parsePolicyLayer(policyAnnotations(annotations), () => '');
  return resolvePolicy([config.defaults, own.layer]);
}
