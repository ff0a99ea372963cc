import { describe, expect, it } from 'vitest';
import { limiter } from '../../lib/core/limit.ts';

/** A task the test ends by hand, recording when it started. */
function gate(started: number[], id: number) {
  let open!: () => void;
  const done = new Promise<void>((resolve) => {
    open = resolve;
  });
  const task = async () => {
    started.push(id);
    await done;
    return id;
  };
  return { task, open };
}

describe('limiter as a pool', () => {
  it.each<[number, number, number]>([
    [1, 4, 1],
    [2, 4, 2],
    [3, 2, 2],
  ])(
    'max %i over %i tasks: at most %i start at once, the rest in order as slots free',
    async (max, n, first) => {
      const limit = limiter(max);
      const started: number[] = [];
      const gates = Array.from({ length: n }, (_, i) => gate(started, i));
      const all = Promise.all(gates.map((g) => limit(g.task)));
      await new Promise((resolve) => setImmediate(resolve));
      expect(started).toEqual(Array.from({ length: first }, (_, i) => i));
      expect(limit.active).toBe(first);
      for (const g of gates) {
        g.open();
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await all).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(started).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(limit.active).toBe(0);
    },
  );

  it.each([0, -1, 1.5, Number.NaN])('refuses max %s', (max) => {
    expect(() => limiter(max)).toThrow(RangeError);
  });
});
