import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import type { ListQuery, ListResult, ListWatchTransport } from '../../lib/kube/list-watch-transport.ts';
import { changedRuns, podFeed } from '../../lib/kube/pod-feed.ts';
import type { KubePort } from '../../lib/kube/port.ts';
import { sharedReads } from '../../lib/kube/shared-reads.ts';
import { withSharedReads } from '../../lib/kube/shared-reads-port.ts';
import type { KhState } from '../../lib/state/resources.ts';

// The reads a batch's runs share (lib/kube/shared-reads.ts, pod-feed.ts, shared-reads-port.ts): one list
// per namespace instead of one read per check, each item taken once and only while fresh, and a namespace
// too large for the bound left to per-run reads.

type Obj = KubernetesObject;
type Handler = (type: string, o: Obj) => void;

/** An API server the test scripts: lists answer from `answers` by path, each watch's events are sent by the test. */
class Scripted implements ListWatchTransport<Obj> {
  readonly lists: Array<{ path: string; query: ListQuery }> = [];
  readonly watches: Array<{ path: string; resourceVersion?: string; send: Handler; ended: boolean }> = [];
  constructor(readonly answers: Record<string, ListResult<Obj> | Error>) {}
  async list(path: string, query: ListQuery): Promise<ListResult<Obj>> {
    this.lists.push({ path, query });
    const a = this.answers[path];
    if (!a) throw new Error(`no answer for ${path}`);
    if (a instanceof Error) throw a;
    return structuredClone(a);
  }
  async watch(
    path: string,
    query: { resourceVersion?: string },
    onEvent: Handler,
    onDone: (e: unknown) => void,
  ) {
    const w = { path, resourceVersion: query.resourceVersion, send: onEvent, ended: false };
    this.watches.push(w);
    return {
      abort: () => {
        if (w.ended) return;
        w.ended = true;
        onDone(Object.assign(new Error('aborted'), { name: 'AbortError' }));
      },
    };
  }
}

const state = (ns: string, name: string, rv = '5'): KhState =>
  ({ metadata: { name, namespace: ns, resourceVersion: rv }, spec: {} }) as unknown as KhState;
const pod = (ns: string, name: string, check: string, run: string, rv = '7'): V1Pod => ({
  metadata: {
    name,
    namespace: ns,
    uid: `uid-${name}`,
    resourceVersion: rv,
    labels: { 'kuberhealthy-check-name': check, 'kuberhealthy-run-id': run },
  },
});
const statesPath = (ns: string) => `/apis/comcast.github.io/v1/namespaces/${ns}/khstates`;
const podsPath = (ns: string) => `/api/v1/namespaces/${ns}/pods`;
const flush = () => new Promise((r) => setImmediate(r));

function reads(t: Scripted, opts: { now?: () => number; per?: Record<string, number> } = {}) {
  const session = new AbortController();
  const shared = sharedReads({
    transport: t,
    checksPerNamespace: new Map(Object.entries(opts.per ?? { a: 3 })),
    monoMs: opts.now ?? (() => 0),
    signal: session.signal,
  });
  return { shared, session };
}

describe('shared khstate reads', () => {
  it('lists a namespace once for all its checks and hands out each state once', async () => {
    const t = new Scripted({
      [statesPath('a')]: { metadata: { resourceVersion: '9' }, items: [state('a', 'c1'), state('a', 'c2')] },
    });
    const { shared } = reads(t);
    const [one, two, missing] = await Promise.all([
      shared.takeState('a', 'c1'),
      shared.takeState('a', 'c2'),
      shared.takeState('a', 'c3'),
    ]);
    expect(one?.state?.metadata.name).toBe('c1');
    expect(two?.state?.metadata.name).toBe('c2');
    // Not in the list: the state does not exist (the claim creates it; a conflict if it does by now).
    expect(missing).toEqual({ state: null });
    expect(t.lists).toEqual([{ path: statesPath('a'), query: { limit: 56 } }]);
    // A second read of the same state (a retry after a conflict) is the caller's own.
    expect(await shared.takeState('a', 'c1')).toBeUndefined();
    // A namespace not in the batch is never listed.
    expect(await shared.takeState('b', 'c1')).toBeUndefined();
    expect(t.lists).toHaveLength(1);
  });

  it('hands out nothing from a list older than its age bound', async () => {
    let now = 0;
    const t = new Scripted({
      [statesPath('a')]: { metadata: { resourceVersion: '9' }, items: [state('a', 'c1')] },
    });
    const { shared } = reads(t, { now: () => now });
    expect((await shared.takeState('a', 'c1'))?.state).not.toBeNull();
    now = 15_001;
    expect(await shared.takeState('a', 'c2')).toBeUndefined();
  });

  it('declines a namespace holding more than its bound, and one whose list failed', async () => {
    const t = new Scripted({
      [statesPath('a')]: { metadata: { resourceVersion: '9', continue: 'next' }, items: [state('a', 'c1')] },
      [statesPath('b')]: new Error('HTTP 500'),
    });
    const { shared } = reads(t, { per: { a: 1, b: 1 } });
    expect(await shared.takeState('a', 'c1')).toBeUndefined();
    expect(await shared.takeState('b', 'c1')).toBeUndefined();
  });
});

describe('the namespace pod feed', () => {
  const feedOf = (t: Scripted, limit = 100) => {
    const session = new AbortController();
    return {
      session,
      feed: podFeed({
        namespace: 'a',
        transport: t as unknown as ListWatchTransport<V1Pod>,
        limit,
        signal: session.signal,
      }),
    };
  };

  it('lists and watches once for every check, each given its own pods', async () => {
    const t = new Scripted({
      [podsPath('a')]: {
        metadata: { resourceVersion: '20' },
        items: [pod('a', 'c1-old', 'c1', 'r0'), pod('a', 'c2-old', 'c2', 'r9')],
      },
    });
    const { feed, session } = feedOf(t);
    const [c1, c2] = await Promise.all([feed.checkPods('c1'), feed.checkPods('c2')]);
    expect(c1?.pods.map((p) => p.metadata?.name)).toEqual(['c1-old']);
    expect(c2?.pods.map((p) => p.metadata?.name)).toEqual(['c2-old']);
    expect(c1?.resourceVersion).toBe('20');
    // From the watch cache (resourceVersion 0), as an informer's first list: no wait for a consistent read.
    expect(t.lists).toEqual([
      {
        path: podsPath('a'),
        query: { labelSelector: 'kuberhealthy-check-name', limit: 100, resourceVersion: '0' },
      },
    ]);
    await flush();
    expect(t.watches.map((w) => w.resourceVersion)).toEqual(['20']);
    session.abort();
    await flush();
    expect(t.watches[0]!.ended).toBe(true);
  });

  it("keeps a run's created pod in its view until the feed saw it, then shows its deletion", async () => {
    const t = new Scripted({ [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: [] } });
    const { feed, session } = feedOf(t);
    const views: string[][] = [];
    const run = new AbortController();
    const created = pod('a', 'c1-new', 'c1', 'r1', '21');
    const watching = feed.watchRunPods({
      runUuid: 'r1',
      signal: run.signal,
      seed: [created],
      onChange: (pods) => views.push(pods.map((p) => p.metadata?.name ?? '')),
    });
    await flush();
    const w = t.watches[0]!;
    // Another run's pod changes first: this run is not told; the created pod stays in its view.
    w.send('ADDED', pod('a', 'c2-new', 'c2', 'r2', '22'));
    expect(views).toEqual([['c1-new']]);
    w.send('ADDED', created);
    w.send('DELETED', { ...created, metadata: { ...created.metadata, resourceVersion: '23' } });
    expect(views).toEqual([['c1-new'], ['c1-new'], []]);
    run.abort();
    expect(await watching).toBe(true);
    w.send('ADDED', pod('a', 'c1-later', 'c1', 'r1', '24'));
    expect(views).toHaveLength(3);
    session.abort();
  });

  it("tells each run of its own pods' changes only; after a relist, each run that has a pod", async () => {
    const t = new Scripted({
      [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: [pod('a', 'p1', 'c1', 'r1', '20')] },
    });
    const { feed, session } = feedOf(t);
    const told: Record<string, number> = { r1: 0, r2: 0, r3: 0 };
    const runs = ['r1', 'r2', 'r3'].map((runUuid) => {
      const run = new AbortController();
      void feed.watchRunPods({ runUuid, signal: run.signal, seed: [], onChange: () => told[runUuid]!++ });
      return run;
    });
    await flush();
    expect(told).toEqual({ r1: 1, r2: 1, r3: 1 }); // each run's first view
    const w = t.watches[0]!;
    w.send('ADDED', pod('a', 'p2', 'c2', 'r2', '21'));
    w.send('MODIFIED', pod('a', 'p1', 'c1', 'r1', '22'));
    w.send('MODIFIED', pod('a', 'p2', 'c2', 'r2', '23'));
    expect(told).toEqual({ r1: 2, r2: 3, r3: 1 });
    w.send('DELETED', pod('a', 'p1', 'c1', 'r1', '24'));
    expect(told).toEqual({ r1: 3, r2: 3, r3: 1 });
    // The watch's resourceVersion expired: the feed lists again, and every object of the list is new.
    t.answers[podsPath('a')] = {
      metadata: { resourceVersion: '30' },
      items: [pod('a', 'p2', 'c2', 'r2', '23')],
    };
    w.send('ERROR', { code: 410 } as unknown as Obj);
    await vi.waitFor(() => expect(told).toEqual({ r1: 3, r2: 4, r3: 1 }), { timeout: 5_000 });
    for (const run of runs) run.abort();
    session.abort();
  });

  it('finds the runs whose pods were added, changed or removed between two views', () => {
    const kept = pod('a', 'k', 'c1', 'r1');
    const before = new Map([
      ['k', kept],
      ['m', pod('a', 'm', 'c2', 'r2')],
      ['gone', pod('a', 'gone', 'c3', 'r3')],
    ]);
    const after = new Map([
      ['k', kept],
      ['m', pod('a', 'm', 'c2', 'r2', '8')],
      ['new', pod('a', 'new', 'c4', 'r4')],
    ]);
    expect([...changedRuns(before, after)].sort()).toEqual(['r2', 'r3', 'r4']);
    expect(changedRuns(after, after).size).toBe(0);
  });

  it("follows every run of a batch of 50 without Node's listener-leak warning on the batch's signal", async () => {
    const t = new Scripted({ [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: [] } });
    const { shared, session } = reads(t, { per: { a: 50 } });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const runs = Array.from({ length: 50 }, () => new AbortController());
      const following = runs.map((run, i) =>
        shared
          .pods('a')!
          .watchRunPods({ runUuid: `r${i}`, signal: run.signal, seed: [], onChange: () => {} }),
      );
      await flush();
      await flush();
      for (const run of runs) run.abort();
      expect(await Promise.all(following)).toEqual(runs.map(() => true));
      await flush();
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      session.abort();
    }
  });

  it('tries its first list again after a 429 instead of leaving every run to list its own', async () => {
    const t = new Scripted({ [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: [] } });
    const list = t.list.bind(t);
    let refused = 0;
    t.list = async (path, query) => {
      if (refused++ === 0) throw Object.assign(new Error('HTTP 429'), { statusCode: 429 });
      return list(path, query);
    };
    const { feed, session } = feedOf(t);
    expect(await feed.checkPods('c1')).toEqual({ pods: [], resourceVersion: '20' });
    expect(t.lists).toHaveLength(1);
    session.abort();
  });

  it('declines a namespace with more checker pods than its bound: the runs list and watch their own', async () => {
    const t = new Scripted({
      [podsPath('a')]: { metadata: { resourceVersion: '20', continue: 'more' }, items: [] },
    });
    const { feed } = feedOf(t, 10);
    expect(await feed.checkPods('c1')).toBeUndefined();
    const run = new AbortController();
    expect(await feed.watchRunPods({ runUuid: 'r1', signal: run.signal, seed: [], onChange: () => {} })).toBe(
      false,
    );
    expect(t.watches).toHaveLength(0);
  });

  it('declines a namespace whose list from the watch cache left the bound unheeded (no continue)', async () => {
    const pods = Array.from({ length: 11 }, (_, i) => pod('a', `p${i}`, `c${i}`, `r${i}`));
    const t = new Scripted({ [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: pods } });
    const { feed } = feedOf(t, 10);
    expect(await feed.checkPods('c1')).toBeUndefined();
    expect(t.watches).toHaveLength(0);
  });
});

describe('the batch port over shared reads', () => {
  const inner = () => {
    const calls: string[] = [];
    const port = {
      readState: async (ns: string, name: string) => {
        calls.push(`readState ${ns}/${name}`);
        return null;
      },
      listCheckPodsAt: async (ns: string, name: string) => {
        calls.push(`listCheckPodsAt ${ns}/${name}`);
        return { pods: [], resourceVersion: '1' };
      },
      watchRun: async (o: { namespace: string }) => {
        calls.push(`watchRun ${o.namespace}`);
      },
    } as unknown as KubePort;
    return { port, calls };
  };

  it("takes a run's first state read and pod list from the namespace's, then reads for itself", async () => {
    const t = new Scripted({
      [statesPath('a')]: { metadata: { resourceVersion: '9' }, items: [state('a', 'c1')] },
      [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: [] },
    });
    const { shared, session } = reads(t);
    const { port, calls } = inner();
    const kube = withSharedReads(port, shared);
    expect((await kube.readState('a', 'c1'))?.metadata.name).toBe('c1');
    expect(await kube.readState('a', 'c1')).toBeNull();
    expect(await kube.readState('other', 'x')).toBeNull();
    expect(await kube.listCheckPodsAt('a', 'c1')).toEqual({ pods: [], resourceVersion: '20' });
    await kube.listCheckPodsAt('other', 'x');
    expect(calls).toEqual(['readState a/c1', 'readState other/x', 'listCheckPodsAt other/x']);
    session.abort();
  });

  it("leaves a run that watches its khstate (an adopted one) to inner's watch", async () => {
    const t = new Scripted({ [podsPath('a')]: { metadata: { resourceVersion: '20' }, items: [] } });
    const { shared, session } = reads(t);
    const { port, calls } = inner();
    const kube = withSharedReads(port, shared);
    const run = new AbortController();
    await kube.watchRun({
      namespace: 'a',
      checkName: 'c1',
      runUuid: 'r1',
      signal: run.signal,
      onChange: () => {},
    });
    expect(calls).toEqual(['watchRun a']);
    const views: number[] = [];
    const watching = kube.watchRun({
      namespace: 'a',
      checkName: 'c1',
      runUuid: 'r1',
      signal: run.signal,
      watchState: false,
      onChange: (v) => views.push(v.pods.length),
    });
    await flush();
    expect(views).toEqual([0]);
    run.abort();
    await watching;
    expect(calls).toEqual(['watchRun a']);
    session.abort();
  });
});
