import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { WriteConflict } from '../../lib/kube/errors.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { kubePort } from '../../lib/kube/kube-port.ts';
import { getJson } from '../../lib/kube/rest.ts';
import { retryAfterMs } from '../../lib/kube/transient.ts';

// A plain HTTP stand-in for the API server on 127.0.0.1 whose answers the test scripts: the runner's reads
// (khcheck, khstate, its check's pods) are tried again after an overloaded moment (504, 429), and are not
// after an answer that will not change (403), nor for a write.

let server: Server;
let kc: KubeConfig;
let script: number[] = [];
/** Retry-After of the scripted 429s, when set. */
let retryAfter: string | undefined;
/** While set, answers wait for it: the test counts requests in flight. */
let hold: Promise<void> | undefined;
let inFlight = 0;
let mostInFlight = 0;
let podAnswer: { create: unknown[]; list: unknown[] } = { create: [], list: [] };
const seen: string[] = [];

const khcheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: 'c', namespace: 'ns', resourceVersion: '7' },
  spec: {},
};

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url?.split('?')[0]}`);
    const status = script.shift() ?? 200;
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c;
    });
    req.on('end', async () => {
      // -1: the connection fails after the request arrived (it may have been carried out).
      if (status === -1) return req.socket.destroy();
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await hold;
      inFlight--;
      res.writeHead(status, {
        'content-type': 'application/json',
        ...(status === 429 && retryAfter ? { 'retry-after': retryAfter } : {}),
      });
      if (status >= 400) {
        const reason = status === 409 ? 'AlreadyExists' : status === 429 ? 'TooManyRequests' : 'Timeout';
        res.end(JSON.stringify({ kind: 'Status', code: status, reason, message: 'scripted' }));
      } else if (req.url?.startsWith('/api/v1/') && req.method === 'GET')
        res.end(
          JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '9' }, items: podAnswer.list }),
        );
      else if (req.method === 'POST' || req.method === 'PUT') res.end(body);
      else res.end(JSON.stringify(khcheck));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  kc = stubConfig();
});

function stubConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return config;
}

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

beforeEach(() => {
  script = [];
  retryAfter = undefined;
  hold = undefined;
  mostInFlight = 0;
  podAnswer = { create: [], list: [] };
  seen.length = 0;
});

describe('kubePort reads under an overloaded API server', () => {
  it('reads a khcheck after two 504s and a 429', async () => {
    script = [504, 504, 429];
    const check = await kubePort(kubeClient(kc)).readCheck('ns', 'c');
    expect(check?.metadata.resourceVersion).toBe('7');
    expect(seen).toHaveLength(4);
  });

  it('lists the check pods after a 503', async () => {
    script = [503];
    const listed = await kubePort(kubeClient(kc)).listCheckPodsAt('ns', 'c');
    expect(listed.resourceVersion).toBe('9');
    expect(seen).toEqual(['GET /api/v1/namespaces/ns/pods', 'GET /api/v1/namespaces/ns/pods']);
  });

  it('still reads a missing khstate as null, at once', async () => {
    script = [404];
    expect(await kubePort(kubeClient(kc)).readState('ns', 'c')).toBeNull();
    expect(seen).toHaveLength(1);
  });

  it('does not try a 403 again', async () => {
    script = [403, 200];
    await expect(kubePort(kubeClient(kc)).readCheck('ns', 'c')).rejects.toThrow();
    expect(seen).toHaveLength(1);
  });

  it('does not try a write again: a write that timed out may have landed', async () => {
    script = [504, 200];
    const port = kubePort(kubeClient(kc));
    const state = { ...khcheck, kind: 'KuberhealthyState', metadata: { name: 'c', namespace: 'ns' } };
    await expect(port.createState(state as never, 'test')).rejects.toThrow();
    expect(seen).toEqual(['POST /apis/comcast.github.io/v1/namespaces/ns/khstates']);
  });
});

describe('kubePort.createPod under an overloaded API server', () => {
  const pod = (run: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'c-1', namespace: 'ns', labels: { 'kuberhealthy-run-id': run } },
    spec: { containers: [{ name: 'c', image: 'x' }] },
  });

  it('tries a 429 again: the API server did nothing', async () => {
    script = [429];
    podAnswer = { create: [pod('r1')], list: [] };
    expect((await kubePort(kubeClient(kc)).createPod(pod('r1'))).metadata?.name).toBe('c-1');
    expect(seen).toEqual(['POST /api/v1/namespaces/ns/pods', 'POST /api/v1/namespaces/ns/pods']);
  });

  it('after a 504, a name taken by a pod of the same run is the pod the unanswered try made', async () => {
    script = [504, 409];
    podAnswer = { create: [pod('r1')], list: [pod('r1')] };
    expect(
      (await kubePort(kubeClient(kc)).createPod(pod('r1'))).metadata?.labels?.['kuberhealthy-run-id'],
    ).toBe('r1');
    expect(seen).toEqual([
      'POST /api/v1/namespaces/ns/pods',
      'POST /api/v1/namespaces/ns/pods',
      'GET /api/v1/namespaces/ns/pods',
    ]);
  });

  it('after a connection that failed mid-request, tries again and takes a pod of the same run as made', async () => {
    script = [-1, 409];
    podAnswer = { create: [pod('r1')], list: [pod('r1')] };
    expect(
      (await kubePort(kubeClient(kc)).createPod(pod('r1'))).metadata?.labels?.['kuberhealthy-run-id'],
    ).toBe('r1');
    expect(seen).toEqual([
      'POST /api/v1/namespaces/ns/pods',
      'POST /api/v1/namespaces/ns/pods',
      'GET /api/v1/namespaces/ns/pods',
    ]);
  });

  it('after a 504, a name taken by another run is a conflict', async () => {
    script = [504, 409];
    podAnswer = { create: [], list: [pod('other')] };
    await expect(kubePort(kubeClient(kc)).createPod(pod('r1'))).rejects.toBeInstanceOf(WriteConflict);
  });

  it('without an unanswered try, a taken name is a conflict at once', async () => {
    script = [409];
    podAnswer = { create: [], list: [pod('r1')] };
    await expect(kubePort(kubeClient(kc)).createPod(pod('r1'))).rejects.toBeInstanceOf(WriteConflict);
    expect(seen).toHaveLength(1);
  });
});

describe('kubePort khstate writes under an overloaded API server', () => {
  it('tries a replace again after a 429, and not after a 504', async () => {
    const state = {
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyState',
      metadata: { name: 'c', namespace: 'ns', resourceVersion: '3' },
    };
    script = [429];
    await kubePort(kubeClient(kc)).replaceState(state as never, 'test');
    expect(seen).toHaveLength(2);
    seen.length = 0;
    script = [504];
    await expect(kubePort(kubeClient(kc)).replaceState(state as never, 'test')).rejects.toThrow();
    expect(seen).toHaveLength(1);
  });
});

describe('what a 429 asks for', () => {
  it("client-node's error carries the 429's Retry-After, which the retries honour", async () => {
    script = [429];
    retryAfter = '3';
    const { custom } = kubeClient(kc);
    const error = await custom
      .getNamespacedCustomObject({ group: 'g', version: 'v1', plural: 'p', namespace: 'ns', name: 'c' })
      .catch((e: unknown) => e);
    expect(retryAfterMs(error)).toBe(3_000);
  });

  it("a list-and-watch list's error carries it too", async () => {
    script = [429];
    retryAfter = '2';
    const error = await getJson(kubeClient(kc), '/api/v1/namespaces/ns/pods', {}).catch((e: unknown) => e);
    expect(retryAfterMs(error)).toBe(2_000);
  });
});

describe('the requests in flight of a runner session', () => {
  it('are at most the bound of its client object; the rest wait their turn, and all are answered', async () => {
    const bounded = kubeClient(stubConfig(), { maxInFlight: 3 });
    let release = () => {};
    hold = new Promise<void>((r) => {
      release = r;
    });
    const port = kubePort(bounded);
    const reads = Promise.all([
      ...Array.from({ length: 10 }, () => port.readCheck('ns', 'c')),
      ...Array.from({ length: 5 }, () => port.listCheckPodsAt('ns', 'c')),
    ]);
    await vi.waitFor(() => expect(inFlight).toBe(3), { timeout: 5_000 });
    expect(bounded.limit?.active).toBe(3);
    release();
    expect(await reads).toHaveLength(15);
    expect(mostInFlight).toBe(3);
    expect(seen).toHaveLength(15);
  });

  it("send a run's lease renewal ahead of the requests waiting for the bound, and a claim behind them", async () => {
    const bounded = kubeClient(stubConfig(), { maxInFlight: 1 });
    let release = () => {};
    hold = new Promise<void>((r) => {
      release = r;
    });
    const port = kubePort(bounded);
    const state = (name: string) =>
      ({
        apiVersion: 'comcast.github.io/v1',
        kind: 'KuberhealthyState',
        metadata: { name, namespace: 'ns' },
      }) as never;
    const first = port.readCheck('ns', 'c');
    await vi.waitFor(() => expect(inFlight).toBe(1), { timeout: 5_000 });
    // In the order a batch sends them: a claim and a first claim (create) queued before a claimed run's
    // record and pod create, then a renewal.
    const sends: Array<() => Promise<unknown>> = [
      () => port.replaceState(state('claim'), 'claim'),
      () => port.createState(state('first-claim'), 'claim'),
      () => port.replaceState(state('record'), 'record'),
      () => port.createPod({ metadata: { name: 'checker', namespace: 'ns' } }),
      () => port.replaceState(state('renewal'), 'lease'),
    ];
    const writes: Promise<unknown>[] = [];
    for (const send of sends) {
      writes.push(send());
      await vi.waitFor(() => expect(bounded.limit?.waiting).toBe(writes.length), { timeout: 5_000 });
    }
    release();
    await Promise.all([first, ...writes]);
    const khstates = '/apis/comcast.github.io/v1/namespaces/ns/khstates';
    expect(seen).toEqual([
      'GET /apis/comcast.github.io/v1/namespaces/ns/khchecks/c',
      `PUT ${khstates}/renewal`,
      `PUT ${khstates}/record`,
      'POST /api/v1/namespaces/ns/pods',
      `PUT ${khstates}/claim`,
      `POST ${khstates}`,
    ]);
    expect(mostInFlight).toBe(1);
  });

  it('are not bounded through a client object without one (the tick has its own bound)', async () => {
    let release = () => {};
    hold = new Promise<void>((r) => {
      release = r;
    });
    const port = kubePort(kubeClient(kc));
    const reads = Promise.all(Array.from({ length: 6 }, () => port.readCheck('ns', 'c')));
    await vi.waitFor(() => expect(inFlight).toBe(6), { timeout: 5_000 });
    release();
    await reads;
  });

  it('are bounded per client object: two made from one KubeConfig do not share a bound', async () => {
    const shared = stubConfig();
    const [a, b] = [kubeClient(shared, { maxInFlight: 3 }), kubeClient(shared, { maxInFlight: 3 })];
    let release = () => {};
    hold = new Promise<void>((r) => {
      release = r;
    });
    const reads = Promise.all(
      [a, b].flatMap((client) => Array.from({ length: 4 }, () => kubePort(client).readCheck('ns', 'c'))),
    );
    await vi.waitFor(() => expect(inFlight).toBe(6), { timeout: 5_000 });
    expect([a.limit?.active, b.limit?.active]).toEqual([3, 3]);
    release();
    expect(await reads).toHaveLength(8);
    expect(mostInFlight).toBe(6);
  });
});
