import { describe, expect, it } from 'vitest';
import { admitConnection, type ConnectionLimits } from '../../lib/report/connection-limits.ts';

// Who gives way when a new connection arrives (pure): the per-source cap, the global cap, and which
// connections may be evicted for a new one.

const LIMITS: ConnectionLimits = { maxConnections: 6, maxPerSource: 3, evictAfterMs: 1_000 };
const NOW = 10_000;
type C = { id: string; source: string; busy: boolean; served?: boolean; openedMs: number };
const conn = (id: string, source: string, state: Partial<C> = {}): C => ({
  id,
  source,
  busy: false,
  openedMs: NOW - 10,
  ...state,
});

describe('admitConnection', () => {
  it('admits while there is room', () => {
    expect(admitConnection([conn('a', 'x')], 'x', LIMITS, NOW)).toEqual({ admit: true, evict: undefined });
  });

  it("at a source's cap, refuses while its connections are busy or new, whatever other sources hold", () => {
    const open = [
      conn('a', 'x', { busy: true }),
      conn('b', 'x'),
      conn('c', 'x', { busy: true, served: true }),
    ];
    expect(admitConnection(open, 'x', LIMITS, NOW)).toEqual({ admit: false, reason: 'source' });
    expect(admitConnection(open, 'y', LIMITS, NOW)).toEqual({ admit: true, evict: undefined });
  });

  it("at a source's cap, evicts its oldest connection that has sent nothing for evictAfterMs", () => {
    const open = [conn('a', 'x', { busy: true }), conn('b', 'x', { openedMs: NOW - 1_000 }), conn('c', 'x')];
    expect(admitConnection(open, 'x', LIMITS, NOW)).toMatchObject({ admit: true, evict: { id: 'b' } });
    expect(admitConnection(open, 'x', LIMITS, NOW - 1)).toEqual({ admit: false, reason: 'source' });
  });

  it('evicts at once a connection that was answered and waits between requests (keep-alive)', () => {
    const open = [conn('a', 'x', { busy: true }), conn('b', 'x'), conn('c', 'x', { served: true })];
    expect(admitConnection(open, 'x', LIMITS, NOW)).toMatchObject({ admit: true, evict: { id: 'c' } });
  });

  it('at the global cap, takes the room from the source holding the most, else refuses', () => {
    const open = [
      conn('a', 'x', { served: true }),
      conn('b', 'x', { served: true }),
      conn('c', 'x', { served: true }),
      conn('d', 'y', { served: true }),
      conn('e', 'y', { busy: true }),
      conn('f', 'w', { busy: true }),
    ];
    expect(admitConnection(open, 'z', LIMITS, NOW)).toMatchObject({ admit: true, evict: { id: 'a' } });
    const busy = open.map((c) => ({ ...c, busy: true }));
    expect(admitConnection(busy, 'z', LIMITS, NOW)).toEqual({ admit: false, reason: 'total' });
  });
});
