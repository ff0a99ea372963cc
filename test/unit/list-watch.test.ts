import { getEventListeners } from 'node:events';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ListWatchOptions, runListWatch } from '../../lib/kube/list-watch.ts';
import type {
  ListResult,
  ListWatchTransport,
  Selectors,
  WatchObject,
} from '../../lib/kube/list-watch-transport.ts';

const PATH = '/api/v1/namespaces/ns/configmaps';

type Obj = KubernetesObject;
const obj = (name: string, resourceVersion: string): Obj => ({
  metadata: { name, namespace: 'ns', resourceVersion },
});
const listOf = (resourceVersion: string, ...items: Obj[]): ListResult<Obj> => ({
  metadata: { resourceVersion },
  items,
});
const httpError = (statusCode: number, message: string) => Object.assign(new Error(message), { statusCode });

interface WatchCall {
  query: Selectors & { resourceVersion?: string; allowWatchBookmarks: boolean };
  event(type: string, object: WatchObject<Obj>): void;
  /** Ends the request as the server would: null when it closed it, else the error. */
  end(error?: unknown): void;
  aborted: boolean;
}

/**
 * An API server the test scripts: lists answer from a queue (the last answer repeats), each watch request is
 * handed to the test to send events on and end. Like client-node, a request that fails reports its end
 * before it returns its handle, and aborting a request ends it with an AbortError.
 */
class ScriptedTransport implements ListWatchTransport<Obj> {
  readonly lists: Selectors[] = [];
  readonly watches: WatchCall[] = [];
  listAnswers: (ListResult<Obj> | Error)[] = [listOf('1')];
  /** When set, every watch request fails with it before returning. */
  failWatchesWith: unknown;
  private readonly waiters = new Set<{ test: () => boolean; resolve: () => void }>();

  async list(_path: string, selectors: Selectors): Promise<ListResult<Obj>> {
    this.lists.push(selectors);
    const answer = this.listAnswers[Math.min(this.lists.length - 1, this.listAnswers.length - 1)];
    this.changed();
    if (answer instanceof Error) throw answer;
    return structuredClone(answer as ListResult<Obj>);
  }

  async watch(
    _path: string,
    query: WatchCall['query'],
    onEvent: (type: string, object: WatchObject<Obj>) => void,
    onDone: (error: unknown) => void,
  ): Promise<{ abort(): void }> {
    let ended = false;
    const call: WatchCall = {
      query,
      aborted: false,
      event: (type, object) => {
        if (!ended) onEvent(type, object);
      },
      end: (error = null) => {
        if (ended) return;
        ended = true;
        onDone(error);
      },
    };
    this.watches.push(call);
    if (this.failWatchesWith !== undefined) call.end(this.failWatchesWith);
    this.changed();
    return {
      abort: () => {
        call.aborted = true;
        call.end(Object.assign(new Error('The operation was aborted.'), { name: 'AbortError' }));
      },
    };
  }

  /** Resolves once test() holds; checked now and after every request. */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add({ test, resolve }));
  }

  changed(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.test()) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }
}

/** runListWatch over the scripted transport, recording what it delivered and the delays it asked for. */
function harness(over: Partial<ListWatchOptions<Obj>> & { stopAfterDelays?: number } = {}) {
  const transport = new ScriptedTransport();
  const controller = new AbortController();
  const sets: string[][] = [];
  const interruptions: string[] = [];
  const delaysMs: number[] = [];
  const listenersAtDelay: number[] = [];
  const start = () =>
    runListWatch<Obj>({
      kc: new KubeConfig(),
      path: PATH,
      labelSelector: 'app=dns',
      signal: controller.signal,
      transport,
      onChange: (items) =>
        sets.push([...items.values()].map((o) => `${o.metadata?.name}@${o.metadata?.resourceVersion}`)),
      onInterruption: (reason) => interruptions.push(reason),
      delay: async (ms, signal) => {
        delaysMs.push(ms);
        listenersAtDelay.push(getEventListeners(signal, 'abort').length);
        if (delaysMs.length === over.stopAfterDelays) controller.abort();
        transport.changed();
      },
      ...over,
    });
  return { transport, controller, sets, interruptions, delaysMs, listenersAtDelay, start };
}

/** The nth watch request (1-based), once it was made. */
async function watchNumber(h: ReturnType<typeof harness>, n: number): Promise<WatchCall> {
  await h.transport.until(() => h.transport.watches.length >= n);
  return h.transport.watches[n - 1] as WatchCall;
}

const warnings: Error[] = [];
const onWarning = (warning: Error) => warnings.push(warning);
beforeEach(() => {
  warnings.length = 0;
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

describe('runListWatch', () => {
  it('lists, watches from the list’s resourceVersion, and keeps the set current', async () => {
    const h = harness();
    h.transport.listAnswers = [listOf('10', obj('a', '10'))];
    const running = h.start();
    const watch = await watchNumber(h, 1);
    expect(h.transport.lists).toEqual([{ labelSelector: 'app=dns', fieldSelector: undefined }]);
    expect(watch.query).toEqual({
      labelSelector: 'app=dns',
      fieldSelector: undefined,
      resourceVersion: '10',
      allowWatchBookmarks: true,
    });

    watch.event('ADDED', obj('b', '11'));
    watch.event('MODIFIED', obj('a', '12'));
    watch.event('BOOKMARK', { metadata: { resourceVersion: '15' } });
    watch.event('DELETED', obj('b', '16'));
    expect(h.sets).toEqual([['a@10'], ['a@10', 'b@11'], ['a@12', 'b@11'], ['a@12']]);

    h.controller.abort();
    await running;
    expect(watch.aborted).toBe(true);
  });

  it('starts from a list the caller made (from): no list of its own, its items first, then the watch', async () => {
    const h = harness({ from: { items: [obj('a', '10'), obj('b', '12')], resourceVersion: '11' } });
    const running = h.start();
    const watch = await watchNumber(h, 1);
    expect(h.transport.lists).toEqual([]);
    expect(watch.query.resourceVersion).toBe('11');
    watch.event('DELETED', obj('a', '13'));
    expect(h.sets).toEqual([['a@10', 'b@12'], ['b@12']]);
    // A 410 later lists as usual, with the same selectors.
    h.transport.listAnswers = [listOf('20', obj('b', '14'))];
    watch.event('ERROR', { metadata: {}, code: 410 });
    await watchNumber(h, 2);
    expect(h.transport.lists).toEqual([{ labelSelector: 'app=dns', fieldSelector: undefined }]);
    h.controller.abort();
    await running;
  });

  it('a DELETED event of a replaced object leaves its same-named successor (seeded after the list)', async () => {
    const withUid = (name: string, uid: string, resourceVersion: string): Obj => ({
      metadata: { name, namespace: 'ns', uid, resourceVersion },
    });
    // Listed at 11: the old pod p (uid u1); created after the list: its replacement, also named p (u2).
    const h = harness({
      from: { items: [withUid('p', 'u1', '10'), withUid('p', 'u2', '13')], resourceVersion: '11' },
    });
    const running = h.start();
    const watch = await watchNumber(h, 1);
    watch.event('DELETED', withUid('p', 'u1', '12'));
    watch.event('ADDED', withUid('p', 'u2', '13'));
    watch.event('DELETED', withUid('p', 'u2', '14'));
    expect(h.sets).toEqual([['p@13'], ['p@13'], []]);
    h.controller.abort();
    await running;
  });

  it('resumes a watch the server closed from the last resourceVersion, without listing or waiting', async () => {
    const h = harness();
    h.transport.listAnswers = [listOf('10', obj('a', '10'))];
    const running = h.start();
    const first = await watchNumber(h, 1);
    first.event('BOOKMARK', { metadata: { resourceVersion: '15' } });
    first.end(null);
    const second = await watchNumber(h, 2);
    expect(second.query.resourceVersion).toBe('15');
    expect(h.transport.lists).toHaveLength(1);
    expect(h.interruptions).toEqual([]);
    expect(h.delaysMs).toEqual([]);
    h.controller.abort();
    await running;
  });

  it.each([
    {
      name: 'an ERROR event with code 410',
      expire: (w: WatchCall) => w.event('ERROR', { kind: 'Status', code: 410, metadata: {} } as never),
    },
    {
      name: 'a request that ends with HTTP 410',
      expire: (w: WatchCall) => w.end(httpError(410, 'Gone')),
    },
  ])('lists again, without waiting, after $name', async ({ expire }) => {
    const h = harness();
    h.transport.listAnswers = [listOf('10', obj('a', '10'), obj('b', '10')), listOf('20', obj('a', '18'))];
    const running = h.start();
    const first = await watchNumber(h, 1);
    expire(first);
    const second = await watchNumber(h, 2);
    expect(h.interruptions).toEqual(['resourceVersion expired (410 Gone); listing again']);
    expect(h.transport.lists).toHaveLength(2);
    // The fresh list replaces the set: what was deleted meanwhile is gone.
    expect(h.sets).toEqual([['a@10', 'b@10'], ['a@18']]);
    expect(second.query.resourceVersion).toBe('20');
    expect(h.delaysMs).toEqual([]);
    h.controller.abort();
    await running;
  });

  it('retries an unreachable API server with capped exponential back-off', async () => {
    const h = harness({ stopAfterDelays: 9 });
    h.transport.listAnswers = [new Error('connect ECONNREFUSED 127.0.0.1:6443')];
    await h.start();
    expect(h.delaysMs).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000]);
    expect(h.interruptions[0]).toBe(
      `watch of ${PATH} interrupted: connect ECONNREFUSED 127.0.0.1:6443; retrying in 100 ms`,
    );
    expect(h.transport.watches).toEqual([]);
  });

  it('takes the back-off bounds from its options', async () => {
    const h = harness({ stopAfterDelays: 4, initialBackoffMs: 1_000, maxBackoffMs: 4_000 });
    h.transport.listAnswers = [httpError(503, 'GET /api: HTTP 503')];
    await h.start();
    expect(h.delaysMs).toEqual([1_000, 2_000, 4_000, 4_000]);
  });

  it('starts the back-off over once the watch delivers an event again', async () => {
    const h = harness();
    const running = h.start();
    (await watchNumber(h, 1)).end(httpError(500, 'Internal Server Error'));
    (await watchNumber(h, 2)).end(httpError(500, 'Internal Server Error'));
    const third = await watchNumber(h, 3);
    third.event('ADDED', obj('a', '5'));
    third.end(httpError(500, 'Internal Server Error'));
    await watchNumber(h, 4);
    expect(h.delaysMs).toEqual([100, 200, 100]);
    // The broken watches resume from where they were: no list after the first.
    expect(h.transport.lists).toHaveLength(1);
    h.controller.abort();
    await running;
  });

  it('treats an ERROR event other than 410 as a failure to back off from', async () => {
    const h = harness();
    const running = h.start();
    const first = await watchNumber(h, 1);
    first.event('ERROR', { kind: 'Status', code: 500, message: 'etcd timeout', metadata: {} } as never);
    await watchNumber(h, 2);
    expect(first.aborted).toBe(true);
    expect(h.delaysMs).toEqual([100]);
    expect(h.interruptions).toEqual([
      `watch of ${PATH} interrupted: {"kind":"Status","code":500,"message":"etcd timeout","metadata":{}}; retrying in 100 ms`,
    ]);
    h.controller.abort();
    await running;
  });

  // Regression: the abort listener was added once the request returned its handle and removed when it ended;
  // a request that failed ended first, so its listener stayed: one more per reconnect, until Node warned
  // "MaxListenersExceededWarning: 11 abort listeners added to [AbortSignal]".
  it.each([
    { name: 'fail before they return', failFirst: true },
    { name: 'are closed by the server after they started', failFirst: false },
  ])('leaves no abort listener behind when 25 watch requests $name', async ({ failFirst }) => {
    const h = harness({ stopAfterDelays: 25 });
    if (failFirst) h.transport.failWatchesWith = httpError(500, 'Internal Server Error');
    const running = h.start();
    if (!failFirst) {
      for (let n = 1; n <= 25; n++) (await watchNumber(h, n)).end(httpError(500, 'Internal Server Error'));
    }
    await running;
    expect(h.delaysMs).toHaveLength(25);
    expect(h.listenersAtDelay).toEqual(Array(25).fill(0));
    expect(getEventListeners(h.controller.signal, 'abort')).toHaveLength(0);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('ends the open request and returns when the signal aborts, leaving no listener', async () => {
    const h = harness();
    const running = h.start();
    const watch = await watchNumber(h, 1);
    expect(getEventListeners(h.controller.signal, 'abort')).toHaveLength(1);
    h.controller.abort();
    await running;
    expect(watch.aborted).toBe(true);
    expect(getEventListeners(h.controller.signal, 'abort')).toHaveLength(0);
    expect(h.interruptions).toEqual([]);
  });
});
