import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { SilenceOptions } from '../config/silence-options.ts';
import { EXIT } from '../core/exit-codes.ts';
import type { KindName } from '../core/run-target.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../healthcheck/resources.ts';
import { KHJOB_PLURAL } from '../job/khjob.ts';
import { apiErrorMessage, isNotFound, statusCodeOf } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { retryTransient } from '../kube/transient.ts';
import { formatSilence, parseSilence, SILENCE_ANNOTATION, type Silence } from '../notify/silence.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../state/resources.ts';
import { formatDocument } from './document.ts';
import { formatTable, humanDuration } from './table.ts';

type Obj = { metadata: { name: string; namespace: string; annotations?: Record<string, string> } };

const RESOURCES: Record<KindName, { group: string; version: string; plural: string; noun: string }> = {
  khcheck: { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL, noun: 'khcheck' },
  khjob: { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL, noun: 'khjob' },
  healthcheck: { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL, noun: 'HealthCheck' },
};

/** What happened to one check. */
export interface SilenceResult {
  kind: KindName;
  namespace: string;
  name: string;
  result: 'silenced' | 'unsilenced' | 'was-not-silenced' | 'error';
  /** silenced: until when (RFC 3339). */
  until?: string;
  error?: string;
}

/**
 * The merge patch of one check's annotations: the silence (notify.khrun.dev/silence) set, or removed. Only
 * that annotation: the check's spec and every other annotation are left as they are.
 */
export const silencePatch = (silence: Silence | null) => ({
  metadata: { annotations: { [SILENCE_ANNOTATION]: silence ? formatSilence(silence) : null } },
});

/**
 * `khrun silence` / `khrun unsilence`: writes (or removes) the silence annotation on each check named or
 * selected, as the person running it (their RBAC: patch on the checks; khrun's own identities may not
 * change it, admission policy 6). The silence records who (SelfSubjectReview, else the kubeconfig's user),
 * why and until when; it ends by itself. Exit 2: no such check; 1: a write failed.
 */
export async function silenceCommand(
  opts: SilenceOptions & {
    client: KubeClient;
    nowMs: () => number;
    write: (text: string) => void;
    warn: (text: string) => void;
  },
): Promise<number> {
  let found: Awaited<ReturnType<typeof findTargets>>;
  try {
    found = await findTargets(opts);
  } catch (error) {
    opts.warn(`khrun: ${findError(opts, error)}`);
    return statusCodeOf(error) === 403 ? EXIT.usage : EXIT.runnerError;
  }
  if (found.length === 0) {
    const t = opts.targets;
    opts.warn(
      t.by === 'name'
        ? `khrun: no ${opts.kind ? RESOURCES[opts.kind].noun : 'khcheck or HealthCheck'} ${t.name} in namespace ${t.namespace}`
        : `khrun: no ${opts.kind ? RESOURCES[opts.kind].noun : 'khcheck or HealthCheck'} matches -l ${t.selector} in ${t.scope === 'all' ? 'any namespace' : `namespace ${t.scope.namespaces.join(', ')}`}`,
    );
    return EXIT.usage;
  }
  const nowMs = opts.nowMs();
  const silence: Silence | null =
    opts.action === 'silence'
      ? { untilMs: nowMs + opts.forMs, reason: opts.reason, by: await whoAmI(opts.client), atMs: nowMs }
      : null;
  const results: SilenceResult[] = [];
  for (const { kind, obj } of found) {
    const { namespace, name } = obj.metadata;
    const base = { kind, namespace, name };
    const had = obj.metadata.annotations?.[SILENCE_ANNOTATION];
    if (!silence && had === undefined) {
      results.push({ ...base, result: 'was-not-silenced' });
      continue;
    }
    try {
      const r = RESOURCES[kind];
      await opts.client.custom.patchNamespacedCustomObject(
        {
          group: r.group,
          version: r.version,
          plural: r.plural,
          namespace,
          name,
          body: silencePatch(silence),
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      results.push(
        silence
          ? { ...base, result: 'silenced', until: new Date(silence.untilMs).toISOString() }
          : { ...base, result: 'unsilenced' },
      );
    } catch (error) {
      const code = statusCodeOf(error);
      results.push({
        ...base,
        result: 'error',
        error:
          code === 403
            ? `forbidden: you need patch on ${RESOURCES[kind].plural} in namespace ${namespace} (ClusterRole khrun-silence, docs/alerts.md)`
            : error instanceof Error
              ? error.message
              : String(error),
      });
    }
  }
  if (opts.output !== 'table') opts.write(formatDocument({ results }, opts.output));
  else opts.write(renderResults(results, nowMs));
  return results.some((r) => r.result === 'error') ? EXIT.runnerError : EXIT.ok;
}

export function renderResults(results: readonly SilenceResult[], nowMs: number): string {
  return formatTable([
    ['KIND', 'NAMESPACE', 'NAME', 'RESULT'],
    ...results.map((r) => [
      RESOURCES[r.kind].noun,
      safe(r.namespace),
      safe(r.name),
      r.result === 'silenced' && r.until
        ? `silenced for ${humanDuration(Date.parse(r.until) - nowMs)} (until ${r.until})`
        : r.result === 'error'
          ? `error: ${safe(r.error ?? '')}`
          : r.result,
    ]),
  ]);
}

/** Why the checks could not be read: a 403 says which right is missing and the binding that grants it. */
function findError(opts: SilenceOptions, error: unknown): string {
  if (statusCodeOf(error) !== 403) return `reading the checks failed: ${apiErrorMessage(error)}`;
  const t = opts.targets;
  const where =
    t.by === 'name'
      ? `namespace ${t.namespace}`
      : t.scope === 'all'
        ? 'every namespace'
        : `namespace ${t.scope.namespaces.join(', ')}`;
  const ns = t.by === 'name' ? t.namespace : t.scope === 'all' ? 'NAMESPACE' : t.scope.namespaces[0];
  return (
    `forbidden: you may not read the khchecks and HealthChecks of ${where} (${apiErrorMessage(error)}); ` +
    'silencing needs get, list and patch on them: the ClusterRole khrun-silence bound to you there, e.g. ' +
    `kubectl -n ${ns} create rolebinding khrun-silence-$USER --clusterrole=khrun-silence --user=$USER ` +
    '(docs/alerts.md)'
  );
}

/** Who the person is, as the API server authenticated them; else the kubeconfig's user name. */
async function whoAmI(client: KubeClient): Promise<string> {
  try {
    const review = await client.authentication.createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const user = review.status?.userInfo?.username;
    if (user) return user;
  } catch {
    // Older clusters have no SelfSubjectReview (GA in 1.28): the kubeconfig's name stands in.
  }
  return client.kc.getCurrentUser()?.name ?? 'unknown';
}

async function findTargets(
  opts: SilenceOptions & { client: KubeClient },
): Promise<Array<{ kind: KindName; obj: Obj }>> {
  const custom = opts.client.custom;
  const kinds: KindName[] = opts.kind ? [opts.kind] : ['khcheck', 'healthcheck'];
  const t = opts.targets;
  if (t.by === 'name') {
    for (const kind of kinds) {
      const r = RESOURCES[kind];
      try {
        const obj = (await retryTransient(() =>
          custom.getNamespacedCustomObject({
            group: r.group,
            version: r.version,
            plural: r.plural,
            namespace: t.namespace,
            name: t.name,
          }),
        )) as Obj;
        return [{ kind, obj }];
      } catch (error) {
        // A cluster without v3's CRD answers 404 for the resource itself: the same as no such check.
        if (!isNotFound(error)) throw error;
      }
    }
    return [];
  }
  const out: Array<{ kind: KindName; obj: Obj }> = [];
  for (const kind of kinds) {
    const r = RESOURCES[kind];
    const co = { group: r.group, version: r.version, plural: r.plural, labelSelector: t.selector };
    try {
      const lists = await retryTransient(() =>
        t.scope === 'all'
          ? Promise.all([custom.listClusterCustomObject(co)])
          : Promise.all(
              t.scope.namespaces.map((namespace) => custom.listNamespacedCustomObject({ ...co, namespace })),
            ),
      );
      for (const list of lists) for (const obj of (list as { items: Obj[] }).items) out.push({ kind, obj });
    } catch (error) {
      if (!isNotFound(error) || opts.kind) throw error;
    }
  }
  return out;
}

/** The silence an object carries, if its annotation reads as one (for messages and tests). */
export const silenceOf = (obj: Obj) => {
  const v = obj.metadata.annotations?.[SILENCE_ANNOTATION];
  const parsed = v === undefined ? undefined : parseSilence(v);
  return parsed?.ok ? parsed.value : undefined;
};
