import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { type RunningServer, startReportServer } from '../../lib/report/http-server.ts';
import { type RunningServe, startServe } from '../../lib/report/shared-server.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

// Unsigned reports where they were chosen: lookups shared against a scripted API server on 127.0.0.1 (its
// pod LISTs counted), a few at a time per source; and the connection limits, per source and for headers.

const log = () => ({ info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() });
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An API server whose pod LISTs answer "no pods" after delayMs; lists counts them. */
async function scriptedApi(delayMs: number) {
  const lists: string[] = [];
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/api/v1/pods')) lists.push(req.url);
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] }));
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return { kc, lists };
}

async function serveUnsigned(kc: KubeConfig): Promise<RunningServe> {
  const serve = await startServe({
    client: kubeClient(kc),
    scope: 'all',
    host: '127.0.0.1',
    port: 0,
    identity: 'test',
    log: log(),
    reportKey: undefined,
    unsigned: 'header',
  });
  cleanups.push(() => serve.shutdown({ graceMs: 0 }));
  return serve;
}

/** POSTs a report from the given loopback source address; resolves with the status. */
function report(url: string, opts: { from: string; uuid?: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      localAddress: opts.from,
      headers: { 'content-type': 'application/json', ...(opts.uuid ? { 'kh-run-uuid': opts.uuid } : {}) },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ OK: true, Errors: [] }));
  });
}

describe('unsigned reports, where chosen', () => {
  it('single-flights concurrent lookups of one run UUID and reuses the answer: one pod LIST', async () => {
    const api = await scriptedApi(300);
    const serve = await serveUnsigned(api.kc);
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        report(serve.url, { from: `127.0.0.${i + 2}`, uuid: 'forged-run' }),
      ),
    );
    expect(statuses).toEqual(Array(12).fill(400));
    expect(await report(serve.url, { from: '127.0.0.20', uuid: 'forged-run' })).toBe(400);
    expect(api.lists).toHaveLength(1);
    // Another UUID is another question.
    expect(await report(serve.url, { from: '127.0.0.21', uuid: 'other-run' })).toBe(400);
    expect(api.lists).toHaveLength(2);
  });

  it('takes a few at a time from one source: the rest are answered 429 without a LIST', async () => {
    const api = await scriptedApi(500);
    const serve = await serveUnsigned(api.kc);
    const statuses = await Promise.all(
      Array.from({ length: 7 }, (_, i) => report(serve.url, { from: '127.0.0.5', uuid: `run-${i}` })),
    );
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
    expect(statuses.filter((s) => s === 400)).toHaveLength(4);
    expect(api.lists).toHaveLength(4);
  });
});

async function reportServer(limits: {
  maxConnections?: number;
  maxConnectionsPerSource?: number;
  headersTimeoutMs?: number;
}): Promise<{ server: RunningServer; log: ReturnType<typeof log> }> {
  const l = log();
  const server = await startReportServer(
    {
      lookup: { podsByRunId: async () => [], livePodsByIp: async () => [] },
      state: { read: async () => newKhState('dns', 'checks'), replace: async (s: KhState) => s },
      clock: { nowMs: () => Date.now() },
      log: l,
      server: 'test',
    },
    { host: '0.0.0.0', port: 0, access: { key: undefined, unsigned: 'refuse', scope: 'all' }, ...limits },
  );
  cleanups.push(() => server.close());
  return { server, log: l };
}

/** Opens n connections from one source that send nothing (half-open: no request headers). */
async function halfOpen(port: number, from: string, n: number): Promise<Socket[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve) => {
          const socket = connect({ port, host: '127.0.0.1', localAddress: from }, () => resolve(socket));
          socket.on('error', () => {});
          // Reads whatever the server answers, so its close is seen.
          socket.resume();
        }),
    ),
  );
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
  });
  return sockets;
}

const closed = (socket: Socket) => socket.destroyed || socket.readyState === 'closed';

/** A GET probe of the report path from a source address: 200 when the server serves it. */
function probe(port: number, from: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({
      port,
      host: '127.0.0.1',
      localAddress: from,
      path: '/externalCheckStatus',
      agent: false,
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (e) => resolve(e.name));
    req.end();
  });
}

describe('connection limits', () => {
  it("one source's half-open connections do not lock another source out", async () => {
    const { server, log: l } = await reportServer({ maxConnections: 16, maxConnectionsPerSource: 8 });
    const { port } = new URL(server.url);
    const flood = await halfOpen(Number(port), '127.0.0.7', 20);
    await vi.waitFor(() => expect(flood.filter(closed)).toHaveLength(12));
    expect(await probe(Number(port), '127.0.0.8')).toBe(200);
    expect(l.warn).toHaveBeenCalledWith(
      'connection cap reached: new connections dropped',
      expect.objectContaining({ maxPerSource: 8, cap: 'per source', source: '127.0.0.7' }),
    );
  });

  it('at the total cap, a new connection evicts the oldest idle one of the largest source', async () => {
    const { server } = await reportServer({ maxConnections: 6, maxConnectionsPerSource: 6 });
    const { port } = new URL(server.url);
    const held = await halfOpen(Number(port), '127.0.0.9', 6);
    // Past the grace a new connection gets to send its headers.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await probe(Number(port), '127.0.0.10')).toBe(200);
    await vi.waitFor(() => expect(closed(held[0] as Socket)).toBe(true));
    expect(held.slice(1).some(closed)).toBe(false);
  });

  it('closes a connection that has not finished its headers within headersTimeoutMs', async () => {
    const { server } = await reportServer({ headersTimeoutMs: 400 });
    const { port } = new URL(server.url);
    const [silent, slow] = await halfOpen(Number(port), '127.0.0.11', 2);
    slow?.write('POST /externalCheckStatus HTTP/1.1\r\nhost: x\r\n');
    const startedMs = performance.now();
    await vi.waitFor(() => expect([silent, slow].every((s) => closed(s as Socket))).toBe(true), {
      timeout: 3_000,
      interval: 50,
    });
    expect(performance.now() - startedMs).toBeLessThan(2_500);
  });
});
