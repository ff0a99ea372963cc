import { describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import { MIN_RENEW_INTERVAL_MS, renewIntervalMs, startLeaseKeeper } from '../../lib/run/lease-keeper.ts';
import { ManualScheduler } from './fakes/manual-scheduler.ts';

// A lease is never written past the run's deadline, so once the lease held reaches the deadline the keeper
// has nothing left to renew and stops; a run whose first lease already reaches it is never renewed.

const LEASE_MS = 30_000;

/** A keeper on a scripted clock whose renewals all succeed, counting them. */
function keeper(deadlineMs: number, heldUntilMs = LEASE_MS) {
  const scheduler = new ManualScheduler();
  const controller = new AbortController();
  let renewals = 0;
  let stopped = false;
  const keeping = startLeaseKeeper({
    leaseMs: LEASE_MS,
    heldUntilMs,
    deadlineMs,
    clock: scheduler,
    scheduler,
    signal: controller.signal,
    log: silentLog,
    renew: async () => {
      renewals += 1;
      return 'renewed';
    },
  }).then(() => {
    stopped = true;
  });
  return { scheduler, controller, keeping, renewals: () => renewals, stopped: () => stopped };
}

describe('startLeaseKeeper up to the deadline', () => {
  it.each([
    // Renewals every 15 s: at 15 s (held to 45 s), at 30 s (held to 60 s, or the deadline when sooner) ...
    { deadlineMs: 50_000, renewals: 2, name: 'a deadline between two renewals' },
    { deadlineMs: 60_000, renewals: 2, name: 'a deadline a renewal reaches exactly' },
    { deadlineMs: 60_001, renewals: 3, name: 'a deadline a millisecond past a renewal' },
  ])('stops after the renewal whose lease reaches $name', async ({ deadlineMs, renewals }) => {
    // Prepare
    const k = keeper(deadlineMs);
    // Act: run whatever it schedules, up to a little past the deadline.
    while (k.scheduler.pending > 0 && k.scheduler.nowMs() < deadlineMs + LEASE_MS)
      await k.scheduler.runNext();
    await k.keeping;
    // Assess: stopped by itself (nothing aborted), nothing left scheduled.
    expect(k.renewals()).toBe(renewals);
    expect(k.stopped()).toBe(true);
    expect(k.scheduler.pending).toBe(0);
    expect(k.scheduler.requestedMs).toEqual(Array(renewals).fill(LEASE_MS / 2));
    expect(k.controller.signal.aborted).toBe(false);
  });

  it.each([
    { name: 'reaches', heldUntilMs: 20_000, deadlineMs: 20_000 },
    { name: 'is past', heldUntilMs: 30_000, deadlineMs: 20_000 },
  ])(
    'never renews a run whose first lease $name the deadline (a check shorter than the lease)',
    async ({ heldUntilMs, deadlineMs }) => {
      // Prepare, Act
      const k = keeper(deadlineMs, heldUntilMs);
      await k.keeping;
      // Assess
      expect(k.stopped()).toBe(true);
      expect(k.scheduler.requestedMs).toEqual([]);
      expect(k.renewals()).toBe(0);
    },
  );
});

describe('renewIntervalMs', () => {
  // leftMs: what a renewal leaves of the lease to retry in, a minute or half the lease when that is less.
  it.each([
    { leaseMs: 150_000, intervalMs: 90_000, leftMs: 60_000, name: 'the default lease: a minute left' },
    { leaseMs: 3_600_000, intervalMs: 3_540_000, leftMs: 60_000, name: 'an hour: a minute left' },
    { leaseMs: 120_000, intervalMs: 60_000, leftMs: 60_000, name: 'two minutes: at its half, a minute' },
    { leaseMs: 100_000, intervalMs: 50_000, leftMs: 50_000, name: 'under two minutes: at its half' },
    {
      leaseMs: 300,
      intervalMs: MIN_RENEW_INTERVAL_MS,
      leftMs: 100,
      name: 'a tiny lease: never closer than 200 ms',
    },
  ])('$name', ({ leaseMs, intervalMs, leftMs }) => {
    expect(renewIntervalMs(leaseMs)).toBe(intervalMs);
    expect(leaseMs - renewIntervalMs(leaseMs)).toBe(leftMs);
  });
});
