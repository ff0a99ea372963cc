import type { RunTarget } from '../core/run-target.ts';
import { parentLabel, parseDependsOn, resolveParents } from '../notify/dependencies.ts';
import { POLICY_ANNOTATION_PREFIX } from '../notify/policy.ts';

/**
 * The due objects of one tick in dispatch order, pure: each after the parents it names
 * (notify.khrun.dev/depends-on) that are due in the same tick, else in the order given. Members of a
 * cycle go in the order given, and are returned so the tick can say so; names that do not parse or
 * parents not due now change nothing.
 */
export function parentsFirst<X>(
  items: readonly X[],
  of: (x: X) => { target: RunTarget; annotations?: Readonly<Record<string, string>> },
): { order: X[]; cycle: string[] } {
  const keyOf = (x: X) => parentLabel(of(x).target);
  const keys = new Set(items.map(keyOf));
  const parents = items.map((x) => {
    const { target, annotations } = of(x);
    const parsed = parseDependsOn(annotations?.[`${POLICY_ANNOTATION_PREFIX}depends-on`] ?? '');
    if (!parsed.ok) return [];
    return resolveParents(parsed.value, target)
      .map(parentLabel)
      .filter((k) => keys.has(k));
  });
  if (parents.every((p) => p.length === 0)) return { order: [...items], cycle: [] };
  const placed = new Set<string>();
  const left = items.map((x, i) => ({ x, key: keyOf(x), parents: parents[i] ?? [] }));
  const order: X[] = [];
  const cycle: string[] = [];
  while (left.length) {
    let i = left.findIndex((e) => e.parents.every((p) => placed.has(p)));
    if (i < 0) {
      i = 0;
      cycle.push(left[0]?.key ?? '');
    }
    const [e] = left.splice(i, 1);
    if (!e) break;
    placed.add(e.key);
    order.push(e.x);
  }
  return { order, cycle };
}
