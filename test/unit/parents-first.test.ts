import { describe, expect, it } from 'vitest';
import type { RunTarget } from '../../lib/core/run-target.ts';
import { parentsFirst } from '../../lib/schedule/parents-first.ts';

type Item = { target: RunTarget; annotations?: Record<string, string> };
const check = (name: string, dependsOn?: string, namespace = 'team'): Item => ({
  target: { kind: 'khcheck', namespace, name },
  ...(dependsOn ? { annotations: { 'notify.khrun.dev/depends-on': dependsOn } } : {}),
});
const order = (items: Item[]) => {
  const r = parentsFirst(items, (x) => x);
  return { order: r.order.map((x) => `${x.target.namespace}/${x.target.name}`), cycle: r.cycle };
};

describe('the tick dispatches parents first', () => {
  it('puts each check after the parents it names that are due in the same tick, else keeps the order', () => {
    expect(order([check('api', 'db'), check('web', 'api'), check('db'), check('other')])).toEqual({
      order: ['team/db', 'team/api', 'team/web', 'team/other'],
      cycle: [],
    });
  });

  it('follows parents in other namespaces, ignores parents not due now and names that do not parse; a check waiting for its parent lets the next go first', () => {
    expect(
      order([check('api', 'infra/dns, gone'), check('x', 'BAD NAME!'), check('dns', undefined, 'infra')]),
    ).toEqual({ order: ['team/x', 'infra/dns', 'team/api'], cycle: [] });
  });

  it('keeps the given order when nothing depends on anything', () => {
    const items = [check('b'), check('a'), check('c')];
    expect(parentsFirst(items, (x) => x).order).toEqual(items);
  });

  it('dispatches the members of a cycle in the order given, and names them', () => {
    const r = order([check('a', 'b'), check('b', 'a'), check('c', 'a')]);
    expect(r.order).toEqual(['team/a', 'team/b', 'team/c']);
    expect(r.cycle).toEqual(['khcheck team/a']);
  });
});
