import { isObject } from './field-path.ts';

/**
 * The resources `khrun convert` reads and writes: Kuberhealthy v2.7.1's khcheck and khjob
 * (pkg/apis/khcheck/v1, pkg/apis/khjob/v1) and v3.0.0's HealthCheck (pkg/api).
 */
export const CHECK_KINDS = {
  khcheck: {
    group: 'comcast.github.io',
    version: 'v1',
    kind: 'KuberhealthyCheck',
    plural: 'khchecks',
    names: ['khcheck', 'khchecks', 'khc', 'kuberhealthycheck', 'kuberhealthychecks'],
  },
  khjob: {
    group: 'comcast.github.io',
    version: 'v1',
    kind: 'KuberhealthyJob',
    plural: 'khjobs',
    names: ['khjob', 'khjobs', 'khj', 'kuberhealthyjob', 'kuberhealthyjobs'],
  },
  healthcheck: {
    group: 'kuberhealthy.github.io',
    version: 'v2',
    kind: 'HealthCheck',
    plural: 'healthchecks',
    names: ['healthcheck', 'healthchecks', 'hc'],
  },
} as const;

export type CheckKind = keyof typeof CHECK_KINDS;

export const apiVersionOf = (kind: CheckKind) => `${CHECK_KINDS[kind].group}/${CHECK_KINDS[kind].version}`;

/** v2's status resource: known, but not configuration; a backup of v2 (`kubectl get khchecks,khjobs,khstates`) holds them. */
export const KHSTATE = { apiVersion: 'comcast.github.io/v1', kind: 'KuberhealthyState' } as const;

/** The kind a resource type as typed on the command line names (`khc`, `khchecks`, `hc`...), if any. */
export function kindOfTypeName(name: string): CheckKind | undefined {
  const lower = name.toLowerCase();
  const qualified = lower.split('.')[0] ?? lower; // `khchecks.comcast.github.io` as kubectl accepts it
  return (Object.keys(CHECK_KINDS) as CheckKind[]).find((k) =>
    (CHECK_KINDS[k].names as readonly string[]).includes(qualified),
  );
}

/** What a document is, by its apiVersion and kind. */
export type DocumentKind =
  | { kind: 'check'; check: CheckKind }
  | { kind: 'khstate' }
  /** A check kind under an apiVersion khrun does not know: refused, not guessed. */
  | { kind: 'unknown-version'; expected: string }
  | { kind: 'other' }
  | { kind: 'malformed'; problem: string };

export function classifyDocument(doc: unknown): DocumentKind {
  if (!isObject(doc))
    return { kind: 'malformed', problem: 'is not a mapping (apiVersion, kind, metadata, spec)' };
  const { apiVersion, kind } = doc;
  if (typeof kind !== 'string' || kind === '') return { kind: 'malformed', problem: 'has no kind' };
  if (typeof apiVersion !== 'string' || apiVersion === '')
    return { kind: 'malformed', problem: `(kind ${kind}) has no apiVersion` };
  if (kind === KHSTATE.kind && apiVersion.startsWith('comcast.github.io/')) return { kind: 'khstate' };
  for (const check of Object.keys(CHECK_KINDS) as CheckKind[]) {
    if (CHECK_KINDS[check].kind !== kind) continue;
    if (apiVersion === apiVersionOf(check)) return { kind: 'check', check };
    if (apiVersion.split('/')[0] === CHECK_KINDS[check].group)
      return { kind: 'unknown-version', expected: apiVersionOf(check) };
  }
  return { kind: 'other' };
}
