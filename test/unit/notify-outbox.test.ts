import { describe, expect, it } from 'vitest';
import { deliverableBy, enqueue, OUTBOX_BOUNDS, retryDelayMs, settle } from '../../lib/notify/outbox.ts';
import {
  formatNotifyState,
  type NotifyState,
  parseNotifyState,
  type QueuedNotification,
} from '../../lib/state/notify-state.ts';

const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);

function entry(id: string, over: Partial<QueuedNotification> = {}): QueuedNotification {
  return {
    id,
    incident: 'inc-1',
    event: 'firing',
    kind: 'khcheck',
    outcome: 'Failed',
    severity: 'error',
    run: 'abcdef12',
    failures: 3,
    sinceMs: T0,
    atMs: T0,
    renewMs: 40 * 60_000,
    channels: ['am', 'hook'],
    attempts: 0,
    nextAtMs: T0,
    ...over,
  };
}

const state = (outbox: QueuedNotification[]): NotifyState => ({ alert: 'firing', successes: 0, outbox });

describe('the outbox', () => {
  it('keeps at most maxEntries, dropping the oldest, and counts them', () => {
    let outbox: QueuedNotification[] = [];
    let dropped = 0;
    for (let i = 0; i < OUTBOX_BOUNDS.maxEntries + 3; i++) {
      const r = enqueue(outbox, entry(`n${i}`, { incident: `inc-${i}` }));
      outbox = r.outbox;
      dropped += r.dropped;
    }
    expect(outbox).toHaveLength(OUTBOX_BOUNDS.maxEntries);
    expect(outbox[0]?.id).toBe('n3');
    expect(dropped).toBe(3);
  });

  it('drops a pending reminder of the incident when a later notice is queued', () => {
    const r = enqueue([entry('f'), entry('r', { event: 'reminder' })], entry('x', { event: 'resolved' }));
    expect(r.outbox.map((n) => n.id)).toEqual(['f', 'x']);
  });

  it('lets only the lease holder deliver until the lease lapses, and nobody before the backoff', () => {
    const leased = entry('a', { lease: { holder: 'me', untilMs: T0 + 10_000 } });
    expect(deliverableBy(leased, 'me', T0)).toBe(true);
    expect(deliverableBy(leased, 'tick', T0)).toBe(false);
    expect(deliverableBy(leased, 'tick', T0 + 10_000)).toBe(true);
    expect(deliverableBy(entry('b', { nextAtMs: T0 + 1 }), 'me', T0)).toBe(false);
  });

  it('backs off 30 s, doubling, at most 30 min', () => {
    expect([1, 2, 3, 4, 7, 8, 20].map((a) => retryDelayMs(a, OUTBOX_BOUNDS.retry))).toEqual([
      30_000, 60_000, 120_000, 240_000, 1_800_000, 1_800_000, 1_800_000,
    ]);
  });

  it('settles a pass: delivered channels leave, a failure backs off, a refusal is dropped and noted', () => {
    const s = state([entry('a', { lease: { holder: 'me', untilMs: T0 + 5000 } }), entry('b')]);
    const { state: next } = settle(
      s,
      [
        { id: 'a', delivered: ['am'], rejected: [], failed: [{ channel: 'hook', error: 'HTTP 503' }] },
        { id: 'b', delivered: ['am'], rejected: [{ channel: 'hook', status: 400 }], failed: [] },
      ],
      { holder: 'me', nowMs: T0 + 1000 },
    );
    expect(next.outbox).toEqual([
      {
        ...entry('a'),
        channels: ['hook'],
        attempts: 1,
        nextAtMs: T0 + 1000 + 30_000,
        lastError: 'hook: HTTP 503',
      },
    ]);
    expect(next.rejected).toEqual({ id: 'b', channel: 'hook', status: 400, atMs: T0 + 1000 });
  });

  it('gives up its lease on entries it did not get to, and leaves others to their holders', () => {
    const s = state([
      entry('mine', { lease: { holder: 'me', untilMs: T0 + 5000 } }),
      entry('theirs', { lease: { holder: 'other', untilMs: T0 + 5000 } }),
    ]);
    const { state: next } = settle(s, [], { holder: 'me', nowMs: T0 });
    expect(next.outbox.map((n) => [n.id, n.lease?.holder])).toEqual([
      ['mine', undefined],
      ['theirs', 'other'],
    ]);
  });

  it('drops what stayed undeliverable for a day, and counts it', () => {
    const s = state([entry('old')]);
    const r = settle(
      s,
      [{ id: 'old', delivered: [], rejected: [], failed: [{ channel: 'am', error: 'x' }] }],
      {
        holder: 'me',
        nowMs: T0 + OUTBOX_BOUNDS.maxAgeMs + 1,
      },
    );
    expect(r.state.outbox).toEqual([]);
    expect(r.state.dropped).toBe(1);
    expect(r.expired.map((n) => n.id)).toEqual(['old']);
  });

  it('round-trips through its annotation, and reads a damaged one as absent', () => {
    const s: NotifyState = { ...state([entry('a')]), incident: 'inc-1', sinceMs: T0, severity: 'error' };
    expect(parseNotifyState(formatNotifyState(s))).toEqual(s);
    expect(parseNotifyState('{not json')).toBeUndefined();
    expect(parseNotifyState('{"alert":"maybe"}')).toBeUndefined();
    const damaged = JSON.parse(formatNotifyState(s));
    damaged.outbox.push({ id: 3 });
    expect(parseNotifyState(JSON.stringify(damaged))?.outbox).toHaveLength(1);
  });

  it('stays within a few KiB at its bound (every watcher of khstates receives it)', () => {
    let outbox: QueuedNotification[] = [];
    for (let i = 0; i < 20; i++)
      outbox = enqueue(outbox, entry(`n${i}`, { incident: `i${i}`, error: 'x'.repeat(500) })).outbox;
    expect(Buffer.byteLength(formatNotifyState(state(outbox)))).toBeLessThan(8 * 1024);
  });
});
