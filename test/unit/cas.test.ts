import { describe, expect, it, vi } from 'vitest';
import {
  type CasLoop,
  done,
  type KhStateStore,
  RetriesExhausted,
  updateKhStateWithRetry,
  updateWithRetry,
  write,
} from '../../lib/kube/cas.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { FakeApiError, FakeKube } from './fakes/fake-kube.ts';

// The one read → decide → write-with-resourceVersion loop every khstate writer goes through, on the
// in-memory API server (real preconditions, deep copies) and on a scripted counter where the exact reads
// and decisions are what the test is about.

const NS = 'checks';
const NAME = 'dns';
const REF = { namespace: NS, name: NAME };

/** The khstate with spec.OK set, so each decision's write is visible. */
const withOk = (state: KhState | null, ok: boolean): KhState => {
  const base = state ?? newKhState(NAME, NS);
  return { ...base, spec: { ...base.spec, OK: ok } };
};

/** Someone else writes the khstate before every replace of ours, `times` times (Infinity: always). */
function hammer(kube: FakeKube, times: number) {
  let left = times;
  kube.beforeReplace = () => {
    if (left-- <= 0) return;
    const current = kube.state(NS, NAME);
    if (current) kube.putState({ ...current, spec: { ...current.spec, Errors: [`other writer ${left}`] } });
  };
}

/** A loop over a number held in memory with a version, written with the version as precondition. */
function counter(over: Partial<CasLoop<{ value: number; version: number }, string>> = {}) {
  let stored = { value: 0, version: 1 };
  const seen: { current: number | null; attempt: number }[] = [];
  const loop: CasLoop<{ value: number; version: number }, string> = {
    writer: 'count',
    target: 'memory/counter',
    maxAttempts: 3,
    read: async () => ({ ...stored }),
    decide: (current, attempt) => {
      seen.push({ current: current?.value ?? null, attempt });
      return write(
        { value: (current?.value ?? 0) + 1, version: current?.version ?? 0 },
        (w) => `now ${w.value}`,
      );
    },
    persist: async (next) => {
      if (next.version !== stored.version) throw new WriteConflict('Conflict');
      stored = { value: next.value, version: stored.version + 1 };
      return { ...stored };
    },
    ...over,
  };
  return {
    loop,
    seen,
    stored: () => stored,
    /** Another writer bumps the value and the version. */
    bump: () => {
      stored = { value: stored.value + 10, version: stored.version + 1 };
    },
  };
}

describe('updateWithRetry', () => {
  it('reads, decides and writes once when nobody writes in between, answering what onWritten makes of the write', async () => {
    // Prepare
    const c = counter();
    // Act
    const result = await updateWithRetry(c.loop);
    // Assess
    expect(result).toBe('now 1');
    expect(c.seen).toEqual([{ current: 0, attempt: 1 }]);
    expect(c.stored()).toEqual({ value: 1, version: 2 });
  });

  it('decides again on what it re-read after a conflict, keeping the other write', async () => {
    // Prepare: the other writer lands between our first read and our first write.
    const c = counter();
    const read = c.loop.read;
    let reads = 0;
    c.loop.read = async () => {
      const current = await read();
      if (++reads === 1) c.bump();
      return current;
    };
    // Act
    const result = await updateWithRetry(c.loop);
    // Assess: attempt 2 decided on the bumped value, so the other write is kept.
    expect(c.seen).toEqual([
      { current: 0, attempt: 1 },
      { current: 10, attempt: 2 },
    ]);
    expect(result).toBe('now 11');
    expect(c.stored()).toEqual({ value: 11, version: 3 });
  });

  it.each([1, 3, 8])(
    'gives up after exactly maxAttempts = %i conflicts with RetriesExhausted naming the loop, the target and the last conflict',
    async (maxAttempts) => {
      // Prepare: every write of ours meets a newer version.
      const debug = vi.fn();
      const c = counter({ maxAttempts, log: { info() {}, warn() {}, error() {}, debug } });
      const persist = c.loop.persist;
      let writes = 0;
      c.loop.persist = async (next, current) => {
        writes++;
        c.bump();
        return persist(next, current);
      };
      // Act
      const error = await updateWithRetry(c.loop).catch((e: unknown) => e);
      // Assess
      expect(error).toBeInstanceOf(RetriesExhausted);
      expect(error).toMatchObject({
        name: 'RetriesExhausted',
        writer: 'count',
        attempts: maxAttempts,
        target: 'memory/counter',
        message: `count of memory/counter gave up after ${maxAttempts} write conflicts in a row`,
      });
      expect((error as Error).cause).toBeInstanceOf(WriteConflict);
      expect(writes).toBe(maxAttempts);
      expect(c.seen.map((s) => s.attempt)).toEqual(Array.from({ length: maxAttempts }, (_, i) => i + 1));
      // Each conflict is logged with the writer and the attempt, for the fault suite to attribute.
      expect(debug.mock.calls).toEqual(
        Array.from({ length: maxAttempts }, (_, i) => [
          'write conflicted; reading again',
          { writer: 'count', attempt: i + 1, target: 'memory/counter' },
        ]),
      );
    },
  );

  it('writes nothing when the decision is done, answering its value', async () => {
    // Prepare
    const persist = vi.fn();
    const c = counter({ decide: () => done('nothing to do'), persist });
    // Act
    const result = await updateWithRetry(c.loop);
    // Assess
    expect(result).toBe('nothing to do');
    expect(persist).not.toHaveBeenCalled();
  });

  it('stops with the decision made after a conflict when that one is done', async () => {
    // Prepare: attempt 1 writes and conflicts; attempt 2 sees the other write and has nothing left to do.
    const c = counter();
    c.bump();
    const stale = { value: 0, version: 1 };
    c.loop.initial = stale;
    const decisions: (number | null)[] = [];
    c.loop.decide = (current) => {
      decisions.push(current?.value ?? null);
      return current?.value === 0 ? write({ ...current, value: 1 }, () => 'wrote') : done('already done');
    };
    // Act
    const result = await updateWithRetry(c.loop);
    // Assess
    expect(decisions).toEqual([0, 10]);
    expect(result).toBe('already done');
    expect(c.stored()).toEqual({ value: 10, version: 2 });
  });

  it('writes on the held version without reading first, and reads only after that write conflicted', async () => {
    // Prepare
    const c = counter();
    const read = vi.fn(c.loop.read);
    c.bump();
    c.loop.read = read;
    c.loop.initial = { value: 0, version: 1 };
    // Act
    const result = await updateWithRetry(c.loop);
    // Assess
    expect(c.seen).toEqual([
      { current: 0, attempt: 1 },
      { current: 10, attempt: 2 },
    ]);
    expect(read).toHaveBeenCalledTimes(1);
    expect(result).toBe('now 11');
  });

  it.each([
    {
      name: 'a 404 with a held version (the object was deleted since)',
      held: true,
      reads: 1,
      result: 'now 1',
    },
    { name: 'a 404 on a version it read', held: false, reads: 1, result: undefined },
  ])('on $name: reads again only when the version was held', async ({ held, reads, result }) => {
    // Prepare: the first write answers 404.
    const c = counter();
    const read = vi.fn(c.loop.read);
    c.loop.read = read;
    if (held) c.loop.initial = { value: 0, version: 1 };
    const persist = c.loop.persist;
    let writes = 0;
    c.loop.persist = async (next, current) => {
      if (++writes === 1) throw new FakeApiError(404, 'not found');
      return persist(next, current);
    };
    // Act
    const outcome = await updateWithRetry(c.loop).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    // Assess
    expect(read).toHaveBeenCalledTimes(reads);
    if (result) expect(outcome).toEqual({ value: result });
    else expect(outcome).toMatchObject({ error: { code: 404 } });
  });

  it('lets any other error through at once, without another attempt', async () => {
    // Prepare
    const forbidden = new FakeApiError(403, 'forbidden');
    const c = counter({ persist: vi.fn(async () => Promise.reject(forbidden)) });
    // Act
    const error = await updateWithRetry(c.loop).catch((e: unknown) => e);
    // Assess
    expect(error).toBe(forbidden);
    expect(c.seen).toHaveLength(1);
  });
});

describe('updateKhStateWithRetry', () => {
  it('creates a missing khstate and replaces an existing one, each write carrying the loop name as its writer', async () => {
    // Prepare
    const kube = new FakeKube();
    const writes: string[] = [];
    // The port's writer argument becomes the request's user agent (khrun/<writer>, kube-port.ts).
    const store: KhStateStore = {
      readState: (namespace, name) => kube.readState(namespace, name),
      createState: (state, writer) => {
        writes.push(`create as ${writer}`);
        return kube.createState(state);
      },
      replaceState: (state, writer) => {
        writes.push(`replace as ${writer}`);
        return kube.replaceState(state);
      },
    };
    const loop = (ok: boolean) => ({
      writer: 'record',
      maxAttempts: 3,
      decide: (state: KhState | null) => write(withOk(state, ok), (w: KhState) => w),
    });
    // Act
    const created = await updateKhStateWithRetry(store, REF, loop(true));
    const replaced = await updateKhStateWithRetry(store, REF, loop(false));
    // Assess
    expect(writes).toEqual(['create as record', 'replace as record']);
    expect(created.spec.OK).toBe(true);
    expect(replaced.spec.OK).toBe(false);
    expect(kube.state(NS, NAME)).toEqual(replaced);
  });

  it('on a conflict re-reads the khstate and decides on the version someone else wrote', async () => {
    // Prepare
    const kube = new FakeKube();
    kube.putState(withOk(null, true));
    hammer(kube, 2);
    const seenErrors: string[][] = [];
    // Act
    const written = await updateKhStateWithRetry(kube, REF, {
      writer: 'report',
      maxAttempts: 3,
      decide: (state) => {
        seenErrors.push(state?.spec.Errors ?? []);
        return write(withOk(state, false), (w) => w);
      },
    });
    // Assess: three decisions, the last one on the second other write, which the written version keeps.
    expect(seenErrors).toEqual([[], ['other writer 1'], ['other writer 0']]);
    expect(kube.conflicts).toHaveLength(2);
    expect(written.spec).toMatchObject({ OK: false, Errors: ['other writer 0'] });
  });

  it('gives up with RetriesExhausted naming the writer and `namespace/name`', async () => {
    // Prepare
    const kube = new FakeKube();
    kube.putState(withOk(null, true));
    hammer(kube, Number.POSITIVE_INFINITY);
    // Act
    const error = await updateKhStateWithRetry(kube, REF, {
      writer: 'claim',
      maxAttempts: 4,
      decide: (state) => write(withOk(state, false), (w) => w),
    }).catch((e: unknown) => e);
    // Assess
    expect(error).toMatchObject({
      name: 'RetriesExhausted',
      writer: 'claim',
      attempts: 4,
      target: `${NS}/${NAME}`,
    });
    expect(kube.conflicts).toHaveLength(4);
    expect(kube.state(NS, NAME)?.spec.OK).toBe(true);
  });

  it('a create that finds the khstate created since re-reads and replaces it', async () => {
    // Prepare: we hold "no khstate", another writer created one.
    const kube = new FakeKube();
    kube.putState(withOk(null, true));
    // Act
    const written = await updateKhStateWithRetry(kube, REF, {
      writer: 'claim',
      maxAttempts: 2,
      initial: null,
      decide: (state) => write(withOk(state, false), (w) => w),
    });
    // Assess
    expect(kube.conflicts).toEqual([{ op: 'createState', name: NAME }]);
    expect(kube.calls).toMatchObject({ createState: 1, replaceState: 1, readState: 1 });
    expect(written.spec.OK).toBe(false);
  });
});
