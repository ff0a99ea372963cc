import { describe, expect, it, vi } from 'vitest';
import type { Log } from '../../lib/core/log.ts';
import { claimDispatch } from '../../lib/schedule/claim-check.ts';
import { decideDue } from '../../lib/schedule/due.ts';
import { khStateClaims } from '../../lib/schedule/khstate-claims.ts';
import { readDispatchClaim, withDispatchClaim } from '../../lib/state/dispatch-claim.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { FakeApiError, FakeKube } from './fakes/fake-kube.ts';

// A tick's dispatch claim on one khcheck: a compare-and-swap on its khstate from the listed version, so of
// two ticks that find the check due only one sends it; the other re-reads, sees the claim, and lets go.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.parse('2026-01-01T12:00:00Z');
const MIN = 60_000;

/** The due rule as the tick applies it, on whatever khstate the claim has in hand. */
const decide = (state: KhState | null) =>
  decideDue({ key: 'uid-dns', runIntervalMs: 5 * MIN, createdAtMs: T0 - 60 * MIN, state, nowMs: T0 });

function harness() {
  const kube = new FakeKube();
  const log: Log = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() };
  const deps = { clock: { nowMs: () => T0 }, log };
  const claim = (listed: KhState | null, over: { maxAttempts?: number } = {}) =>
    claimDispatch(deps, {
      store: khStateClaims(kube, { namespace: NS, name: NAME }),
      label: `${NS}/${NAME}`,
      listed,
      decide,
      refAt: (nowMs) => `khrun-dns-${nowMs}`,
      maxAttempts: over.maxAttempts ?? 4,
      identity: 'tick-a',
    });
  return { kube, log, claim };
}

describe('claimDispatch on a khstate', () => {
  it('claims a due check whose khstate does not exist yet in one create, without reading first', async () => {
    // Prepare
    const h = harness();
    // Act
    const result = await h.claim(null);
    // Assess
    const claim = { atMs: T0, ref: `khrun-dns-${T0}`, by: 'tick-a' };
    expect(result).toEqual({ kind: 'claimed', claim, decision: { due: true, reason: 'never-run' } });
    expect(readDispatchClaim(h.kube.state(NS, NAME) ?? null)).toEqual(claim);
    expect(h.kube.calls).toMatchObject({ readState: 0, createState: 1, replaceState: 0 });
  });

  it('claims on the listed khstate with its resourceVersion, keeping what it held', async () => {
    // Prepare
    const h = harness();
    const listed = h.kube.putState({
      ...newKhState(NAME, NS),
      spec: { ...newKhState(NAME, NS).spec, OK: false },
    });
    // Act
    const result = await h.claim(listed);
    // Assess
    expect(result.kind).toBe('claimed');
    expect(h.kube.calls).toMatchObject({ readState: 0, replaceState: 1 });
    expect(h.kube.state(NS, NAME)?.spec.OK).toBe(false);
  });

  it('lets go of a check another tick claimed since it was listed, naming that claim', async () => {
    // Prepare: listed before the other tick's claim landed.
    const h = harness();
    const listed = h.kube.putState(newKhState(NAME, NS));
    h.kube.putState(withDispatchClaim(listed, { atMs: T0 - 1_000, ref: 'khrun-dns-other', by: 'tick-b' }));
    // Act
    const result = await h.claim(listed);
    // Assess
    expect(result).toMatchObject({
      kind: 'lost',
      decision: { due: false, reason: 'dispatched' },
      ref: 'khrun-dns-other',
    });
    expect(h.kube.conflicts).toHaveLength(1);
    expect(readDispatchClaim(h.kube.state(NS, NAME) ?? null)?.by).toBe('tick-b');
  });

  it('writes nothing for a check that is not due on the listed khstate', async () => {
    // Prepare: another tick's claim is in the list already.
    const h = harness();
    const listed = h.kube.putState(
      withDispatchClaim(newKhState(NAME, NS), { atMs: T0 - 1_000, ref: 'khrun-dns-other', by: 'tick-b' }),
    );
    // Act
    const result = await h.claim(listed);
    // Assess
    expect(result).toMatchObject({ kind: 'lost', ref: 'khrun-dns-other' });
    expect(h.kube.calls).toMatchObject({ readState: 0, createState: 0, replaceState: 0 });
  });

  it('leaves a check whose claim keeps conflicting to the next tick, after maxAttempts writes, with a warning', async () => {
    // Prepare: someone else rewrites the khstate (without claiming it) before every write of ours.
    const h = harness();
    const listed = h.kube.putState(newKhState(NAME, NS));
    h.kube.beforeReplace = () => {
      const current = h.kube.state(NS, NAME);
      if (current) h.kube.putState(current);
    };
    // Act
    const result = await h.claim(listed, { maxAttempts: 3 });
    // Assess
    expect(result).toEqual({ kind: 'lost', decision: decide(listed) });
    expect(h.kube.conflicts).toHaveLength(3);
    expect(h.log.warn).toHaveBeenCalledWith('dispatch claim kept conflicting; left for the next tick', {
      check: `${NS}/${NAME}`,
    });
  });

  it('lets any other failure of the write through', async () => {
    // Prepare: the khstate was deleted since it was listed: the replace answers 404, not a conflict.
    const h = harness();
    const listed = h.kube.putState(newKhState(NAME, NS));
    h.kube.states.clear();
    h.kube.beforeReplace = undefined;
    // Act
    const replace = vi
      .spyOn(h.kube, 'replaceState')
      .mockRejectedValueOnce(new FakeApiError(403, 'forbidden'));
    const error = await h.claim(listed).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({ code: 403 });
    expect(replace).toHaveBeenCalledTimes(1);
  });
});
