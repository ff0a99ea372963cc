import { describe, expect, it, vi } from 'vitest';
import type { HealthCheckWrites } from '../../lib/healthcheck/dispatch-claims.ts';
import { healthCheckClaims } from '../../lib/healthcheck/dispatch-claims.ts';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import type { KhJob } from '../../lib/job/khjob.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import { khStateClaims } from '../../lib/schedule/khstate-claims.ts';
import { releaseClaim } from '../../lib/schedule/release-claim.ts';
import { readDispatchClaim, withDispatchClaim } from '../../lib/state/dispatch-claim.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { runTick } from '../../lib/tick/tick.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';
import { FakeApiError, FakeKube } from './fakes/fake-kube.ts';

// The tick's one claim → send → release path, for the kinds whose claims live elsewhere than a khcheck's:
// a khjob's on its khstate, a HealthCheck's in its own annotation.

const T0 = Date.parse('2026-01-01T12:00:00Z');
const log = () => ({ info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() });
const hcClaim = (hc: HealthCheck | undefined) =>
  hc ? readDispatchClaim({ metadata: hc.metadata } as KhState) : undefined;

function khjob(name: string): KhJob {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyJob',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, creationTimestamp: new Date(T0 - 60_000) },
    spec: { timeout: '1m', podSpec: { containers: [{ name: 'c', image: 'busybox' }] } },
  };
}

/** A HealthCheck nobody ran yet (no finalizer, no status): due at once, and khrun's to run. */
function healthCheck(name: string): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: {
      runInterval: '1m',
      timeout: '30s',
      podSpec: { spec: { containers: [{ name: 'c', image: 'x' }] } },
    },
  };
}

/** HealthChecks with the API server's compare-and-swap on replace. */
class FakeHealthChecks implements HealthCheckWrites {
  readonly items = new Map<string, HealthCheck>();
  conflicts = 0;
  /** Runs before a replace is checked against the stored version: lets a test write in between. */
  beforeReplace: (() => void) | undefined;
  private rv = 10;
  put(hc: HealthCheck): HealthCheck {
    const stored = structuredClone({
      ...hc,
      metadata: { ...hc.metadata, resourceVersion: String(++this.rv) },
    });
    this.items.set(`${hc.metadata.namespace}/${hc.metadata.name}`, stored);
    return structuredClone(stored);
  }
  stored(name: string) {
    return this.items.get(`ns/${name}`);
  }
  async get(namespace: string, name: string) {
    const hc = this.items.get(`${namespace}/${name}`);
    return hc ? structuredClone(hc) : null;
  }
  async replace(hc: HealthCheck) {
    await Promise.resolve();
    this.beforeReplace?.();
    const current = this.items.get(`${hc.metadata.namespace}/${hc.metadata.name}`);
    if (!current) throw new FakeApiError(404, 'not found');
    if (current.metadata.resourceVersion !== hc.metadata.resourceVersion) {
      this.conflicts++;
      throw new WriteConflict('Conflict');
    }
    return this.put(hc);
  }
}

function world(o: { jobs?: KhJob[]; healthChecks?: HealthCheck[]; fail?: boolean } = {}) {
  const khstates = new FakeKube();
  const hcs = new FakeHealthChecks();
  for (const hc of o.healthChecks ?? []) hcs.put(hc);
  const kube: TickKube = {
    listChecks: async () => [],
    listStates: async () => [...khstates.states.values()].map((s) => structuredClone(s)),
    readState: (namespace, name) => khstates.readState(namespace, name),
    createState: (s) => khstates.createState(s),
    replaceState: (s) => khstates.replaceState(s),
    listJobs: async () => o.jobs ?? [],
    listHealthChecks: async () => [...hcs.items.values()].map((hc) => structuredClone(hc)),
    healthChecks: hcs,
  };
  const sent: string[] = [];
  const dispatcher: Dispatcher = {
    runsKhJobs: true,
    runsHealthChecks: true,
    refFor: (c, nowMs) => `${c.kind}-${c.name}-${nowMs}`,
    dispatch: async (_c, ref) => {
      await Promise.resolve();
      if (o.fail) throw new Error('jobs.batch is forbidden\nmore');
      sent.push(ref);
    },
  };
  const l = log();
  const tick = (identity = 'tick-a', takeOver = false) =>
    runTick({ kube, dispatcher, clock: { nowMs: () => T0 }, log: l }, { scope: 'all', identity, takeOver });
  return { khstates, hcs, sent, tick, log: l };
}

describe('the tick on khjobs', () => {
  it('dispatches a new khjob under a claim on its khstate; then pending; once it ran, not listed', async () => {
    const w = world({ jobs: [khjob('migrate')] });
    expect(await w.tick()).toMatchObject([
      { check: 'khjob/ns/migrate', result: 'dispatched', ref: `khjob-migrate-${T0}` },
    ]);
    expect(readDispatchClaim(w.khstates.state('ns', 'migrate') ?? null)).toEqual({
      atMs: T0,
      ref: `khjob-migrate-${T0}`,
      by: 'tick-a',
    });
    expect(await w.tick('tick-b')).toMatchObject([{ result: 'not-due', decision: { reason: 'dispatched' } }]);
    const s = w.khstates.state('ns', 'migrate')!;
    s.metadata.annotations = {
      ...s.metadata.annotations,
      [ANNOTATION.outcome]: JSON.stringify({
        uuid: 'uid-migrate',
        kind: 'Succeeded',
        startedAtMs: T0,
        finishedAtMs: T0 + 1_000,
        durationMs: 1_000,
      }),
    };
    w.khstates.putState(s);
    expect(await w.tick('tick-c')).toEqual([]);
    expect(w.sent).toEqual([`khjob-migrate-${T0}`]);
  });

  it('skips a khjob a Kuberhealthy runs (no claim written, nothing sent); sends it with takeOver', async () => {
    const w = world({ jobs: [khjob('theirs')] });
    const s = newKhState('theirs', 'ns');
    s.spec = {
      ...s.spec,
      uuid: '11111111-2222-4333-8444-555555555555',
      AuthoritativePod: 'kuberhealthy-7d9f8-x2k4z',
    };
    w.khstates.putState(s);
    expect(await w.tick()).toMatchObject([{ check: 'khjob/ns/theirs', result: 'refused' }]);
    expect(w.khstates.calls).toMatchObject({ createState: 0, replaceState: 0 });
    expect(w.sent).toEqual([]);
    expect(await w.tick('tick-a', true)).toMatchObject([{ result: 'dispatched' }]);
  });

  it('gives the claim back when the send fails, so the next tick sends it', async () => {
    const w = world({ jobs: [khjob('migrate')], fail: true });
    expect(await w.tick()).toMatchObject([
      { check: 'khjob/ns/migrate', result: 'failed', error: 'jobs.batch is forbidden' },
    ]);
    expect(readDispatchClaim(w.khstates.state('ns', 'migrate') ?? null)).toBeUndefined();
  });

  it('fails the khjob alone when its claim cannot be written, as a khcheck', async () => {
    const w = world({ jobs: [khjob('a'), khjob('b')] });
    const create = w.khstates.createState.bind(w.khstates);
    vi.spyOn(w.khstates, 'createState').mockImplementation(async (s) => {
      if (s.metadata.name === 'a') throw new FakeApiError(403, 'khstates "a" is forbidden');
      return create(s);
    });
    const entries = await w.tick();
    expect(entries.map((e) => [e.check, e.result])).toEqual([
      ['khjob/ns/a', 'failed'],
      ['khjob/ns/b', 'dispatched'],
    ]);
    expect(entries[0]?.error).toBe('khstates "a" is forbidden');
  });
});

describe('the tick on HealthChecks', () => {
  it('claims a due HealthCheck in its annotation on the listed version, then sends it', async () => {
    const w = world({ healthChecks: [healthCheck('dns')] });
    expect(await w.tick()).toMatchObject([
      { check: 'healthcheck/ns/dns', result: 'dispatched', decision: { due: true, reason: 'never-run' } },
    ]);
    expect(hcClaim(w.hcs.stored('dns'))).toEqual({ atMs: T0, ref: `healthcheck-dns-${T0}`, by: 'tick-a' });
    expect(w.sent).toEqual([`healthcheck-dns-${T0}`]);
    expect(await w.tick('tick-b')).toMatchObject([{ result: 'not-due', decision: { reason: 'dispatched' } }]);
  });

  it('lets go of a HealthCheck another tick claimed since it was listed, naming that claim', async () => {
    const w = world({ healthChecks: [healthCheck('dns')] });
    const other = { atMs: T0 - 1_000, ref: 'healthcheck-dns-other', by: 'tick-b' };
    w.hcs.beforeReplace = () => {
      w.hcs.beforeReplace = undefined;
      const current = w.hcs.stored('dns')!;
      w.hcs.put({
        ...current,
        metadata: {
          ...current.metadata,
          annotations: { [ANNOTATION.dispatch]: JSON.stringify(other) },
        },
      });
    };
    expect(await w.tick()).toMatchObject([
      { result: 'lost', decision: { due: false, reason: 'dispatched' }, ref: 'healthcheck-dns-other' },
    ]);
    expect(w.hcs.conflicts).toBe(1);
    expect(hcClaim(w.hcs.stored('dns'))).toEqual(other);
    expect(w.sent).toEqual([]);
  });

  it('leaves a HealthCheck whose claim keeps conflicting to the next tick (lost, with a warning)', async () => {
    const w = world({ healthChecks: [healthCheck('dns')] });
    w.hcs.beforeReplace = () => void w.hcs.put(w.hcs.stored('dns')!);
    expect(await w.tick()).toMatchObject([{ check: 'healthcheck/ns/dns', result: 'lost' }]);
    expect(w.hcs.conflicts).toBe(4);
    expect(w.log.warn).toHaveBeenCalledWith('dispatch claim kept conflicting; left for the next tick', {
      check: 'healthcheck/ns/dns',
    });
    expect(w.sent).toEqual([]);
  });

  it('gives the claim back when the send fails', async () => {
    const w = world({ healthChecks: [healthCheck('dns')], fail: true });
    expect(await w.tick()).toMatchObject([{ result: 'failed', error: 'jobs.batch is forbidden' }]);
    expect(hcClaim(w.hcs.stored('dns'))).toBeUndefined();
    expect(w.hcs.stored('dns')?.metadata.annotations).toEqual({});
  });
});

describe('releaseClaim', () => {
  const ours = { atMs: T0, ref: 'ref-ours', by: 'tick-a' };
  const theirs = { atMs: T0 + 1_000, ref: 'ref-theirs', by: 'tick-b' };

  it('removes a khstate claim that is still ours, and keeps one another tick wrote since', async () => {
    const kube = new FakeKube();
    const store = khStateClaims(kube, { namespace: 'ns', name: 'c' });
    kube.putState(withDispatchClaim(newKhState('c', 'ns'), ours));
    await releaseClaim(store, ours);
    expect(readDispatchClaim(kube.state('ns', 'c') ?? null)).toBeUndefined();
    kube.putState(withDispatchClaim(newKhState('c', 'ns'), theirs));
    await releaseClaim(store, ours);
    expect(readDispatchClaim(kube.state('ns', 'c') ?? null)).toEqual(theirs);
    // A claim of the same ref at another time is not ours either.
    kube.putState(withDispatchClaim(newKhState('c', 'ns'), { ...ours, atMs: T0 + 5 }));
    await releaseClaim(store, ours);
    expect(readDispatchClaim(kube.state('ns', 'c') ?? null)?.atMs).toBe(T0 + 5);
  });

  it('removes a HealthCheck claim that is still ours, and keeps one another tick wrote since', async () => {
    const hcs = new FakeHealthChecks();
    const store = healthCheckClaims(hcs, { namespace: 'ns', name: 'dns' });
    const withClaim = (claim: typeof ours) => {
      const hc = healthCheck('dns');
      hc.metadata.annotations = { [ANNOTATION.dispatch]: JSON.stringify(claim) };
      return hc;
    };
    hcs.put(withClaim(ours));
    await releaseClaim(store, ours);
    expect(hcClaim(hcs.stored('dns'))).toBeUndefined();
    hcs.put(withClaim(theirs));
    await releaseClaim(store, ours);
    expect(hcClaim(hcs.stored('dns'))).toEqual(theirs);
  });

  it('gives up quietly when the release keeps conflicting', async () => {
    const hcs = new FakeHealthChecks();
    const hc = healthCheck('dns');
    hc.metadata.annotations = { [ANNOTATION.dispatch]: JSON.stringify(ours) };
    hcs.put(hc);
    hcs.beforeReplace = () => void hcs.put(hcs.stored('dns')!);
    await expect(releaseClaim(healthCheckClaims(hcs, { namespace: 'ns', name: 'dns' }), ours)).resolves.toBe(
      undefined,
    );
    expect(hcs.conflicts).toBe(3);
  });
});
