import { KIND_NAMES, type KindName } from '../core/run-target.ts';
import type { NotifyState } from '../state/notify-state.ts';
import { type Parsed, parsedBad, parsedOk } from './policy-value.ts';

/**
 * A check a check depends on (notify.khrun.dev/depends-on): while a parent is failing, the child's
 * failures are recorded naming it and notify nobody. Written `[KIND:][NAMESPACE/]NAME`; the namespace and
 * kind default to the child's (a khcheck's or khjob's parent: a khcheck, whose state is its khstate).
 */
export interface ParentRef {
  /** Absent: the child's kind (a khjob's parent: a khcheck). */
  kind?: KindName;
  /** Absent: the child's namespace. */
  namespace?: string;
  name: string;
}

export interface ResolvedParent {
  kind: KindName;
  namespace: string;
  name: string;
}

/** What a child needs to know of a parent: whether its last result failed, and what blocked it in turn. */
export interface ParentView {
  failing: boolean;
  /** The parent's own notify state (its `blocked` chain), if it keeps one. */
  notify?: NotifyState;
}

/**
 * Reads a parent's state (its khstate; a HealthCheck itself): null when there is none. Throws what the API
 * server answered otherwise (403 included).
 */
export type ReadParent = (parent: ResolvedParent) => Promise<ParentView | null>;

export const MAX_PARENTS = 5;
/** The longest chain of parents a blocked check keeps (its direct parent first, the root last). */
export const MAX_CHAIN = 8;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const WANT = `a comma-separated list of up to ${MAX_PARENTS} checks, each [KIND:][NAMESPACE/]NAME with KIND khcheck, khjob or healthcheck (default: the check's own kind and namespace), e.g. "dns, kube-system/api-server"`;

export function parseDependsOn(value: string): Parsed<ParentRef[]> {
  const t = value.trim();
  if (t === '' || t === 'none') return parsedOk([]);
  const refs: ParentRef[] = [];
  for (const item of t.split(',').map((s) => s.trim())) {
    const m = /^(?:([a-z]+):)?(?:([^/]+)\/)?([^/]+)$/.exec(item);
    const [, kind, namespace, name = ''] = m ?? [];
    if (
      !m ||
      (kind !== undefined && !(KIND_NAMES as readonly string[]).includes(kind)) ||
      (namespace !== undefined && !NAMESPACE.test(namespace)) ||
      !NAME.test(name)
    )
      return parsedBad(WANT);
    refs.push({ ...(kind ? { kind: kind as KindName } : {}), ...(namespace ? { namespace } : {}), name });
  }
  if (refs.length > MAX_PARENTS) return parsedBad(WANT);
  return parsedOk(refs);
}

/** How a parent is named in records, problems and notices: `khcheck team-a/db`. */
export const parentLabel = (p: { kind: KindName; namespace: string; name: string }) =>
  `${p.kind === 'healthcheck' ? 'HealthCheck' : p.kind} ${p.namespace}/${p.name}`;

/**
 * The parents of a child, absolute: a namespace left out is the child's, a kind left out is the child's
 * (a khjob's: khcheck); the child itself is left out.
 */
export function resolveParents(
  refs: readonly ParentRef[],
  child: { kind: KindName; namespace: string; name: string },
): ResolvedParent[] {
  const own: KindName = child.kind === 'healthcheck' ? 'healthcheck' : 'khcheck';
  const out: ResolvedParent[] = [];
  for (const r of refs) {
    const p = { kind: r.kind ?? own, namespace: r.namespace ?? child.namespace, name: r.name };
    const self =
      p.namespace === child.namespace &&
      p.name === child.name &&
      (p.kind === 'healthcheck') === (child.kind === 'healthcheck');
    if (!self && !out.some((o) => parentLabel(o) === parentLabel(p))) out.push(p);
  }
  return out;
}

/** What the parents' states say about a failing child: the chain that blocks it, and what was wrong. */
export interface Blocking {
  /** The first failing parent and the chain that blocks it in turn (root last); absent: nothing blocks. */
  by?: string[];
  problems: string[];
}

/**
 * Decides, pure, whether a failing child is blocked: by its first failing parent (in the order named),
 * unless that parent is itself blocked through the child (a cycle), which then blocks nothing and is
 * named as a problem. A parent that could not be read (views: an Error) or has no state blocks nothing.
 */
export function decideBlocking(
  child: string,
  parents: ReadonlyArray<{ parent: ResolvedParent; view: ParentView | null | Error }>,
): Blocking {
  const problems: string[] = [];
  let by: string[] | undefined;
  for (const { parent, view } of parents) {
    const label = parentLabel(parent);
    if (view instanceof Error) {
      problems.push(
        `${child} depends on ${label}, which cannot be read (${view.message}): not taken into account`,
      );
      continue;
    }
    if (view === null) {
      problems.push(
        `${child} depends on ${label}, which has no state (it does not exist, or never ran): not taken into account`,
      );
      continue;
    }
    if (!view.failing || by) continue;
    const chain = [label, ...(view.notify?.blocked?.by ?? [])];
    if (chain.includes(child)) {
      problems.push(
        `dependency cycle: ${[child, ...chain.slice(0, chain.indexOf(child) + 1)].join(' → ')}: ${label} does not hold back ${child}'s notifications`,
      );
      continue;
    }
    by = chain.slice(0, MAX_CHAIN);
  }
  return { ...(by ? { by } : {}), problems };
}
