import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ReportAccess } from '../../lib/report/authorize-report.ts';
import { FREE_BODY_BYTES, type RunningServer, startReportServer } from '../../lib/report/http-server.ts';
import { BodyBudget } from '../../lib/report/read-body.ts';
import { randomReportKey, signedReportUrl } from '../../lib/report/report-token.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

// The report server's own limits, in process on 127.0.0.1: what is refused before the body is read, how
// many body bytes it holds at once, and how many connections it keeps. The API side is a fake that counts.

const KEY = randomReportKey();
let server: RunningServer | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
});

async function start(
  access: ReportAccess,
  limits: { maxConnections?: number; maxBufferedBytes?: number } = {},
) {
  const api = {
    podsByRunId: vi.fn(async () => []),
    livePodsByIp: vi.fn(async () => []),
    read: vi.fn(async () => newKhState('dns', 'checks')),
    replace: vi.fn(async (s: KhState) => s),
  };
  const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() };
  server = await startReportServer(
    {
      lookup: { podsByRunId: api.podsByRunId, livePodsByIp: api.livePodsByIp },
      state: { read: api.read, replace: api.replace },
      clock: { nowMs: () => Date.now() },
      log,
      server: 'test',
    },
    { host: '127.0.0.1', port: 0, access, ...limits },
  );
  const calls = () =>
    api.podsByRunId.mock.calls.length +
    api.livePodsByIp.mock.calls.length +
    api.read.mock.calls.length +
    api.replace.mock.calls.length;
  return { url: server.url, calls, log };
}

/** Sends the headers and `sendBytes` of a body declared as `declaredBytes`; resolves with the answer, if any, within waitMs. */
function partial(url: string, declaredBytes: number, sendBytes: number, waitMs = 300) {
  return new Promise<{ status?: number; retryAfter?: string; text: string }>((resolve) => {
    const req = request(url, { method: 'POST', headers: { 'content-length': String(declaredBytes) } });
    const timer = setTimeout(() => resolve({ text: '' }), waitMs);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c;
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'], text });
      });
    });
    req.on('error', () => undefined);
    req.on('socket', (s) => sockets.push(s));
    req.write(Buffer.alloc(sendBytes, ' '));
  });
}

describe('the report server before the body', () => {
  it('refuses unsigned, forged and malformed URLs with 400 without reading the body or calling the API', async () => {
    const s = await start({ key: KEY, unsigned: 'refuse', scope: 'all' });
    const run = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: Date.now() + 60_000 };
    const forged = signedReportUrl(s.url, randomReportKey(), run);
    for (const url of [s.url, forged, `${s.url}/checks/dns`]) {
      // Headers only, a 200 KiB body declared: the answer comes before a body byte is sent.
      const answer = await partial(url, 200 * 1024, 0);
      expect(answer.status, url).toBe(400);
      expect(answer.text).toMatch(/^report rejected: /);
    }
    expect(s.calls()).toBe(0);
  });

  it('answers a refused small report on an open connection (its body discarded), a large or chunked one by closing it', async () => {
    const s = await start({ key: KEY, unsigned: 'refuse', scope: 'all' });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (headers: Record<string, string>, body: string) =>
      new Promise<{ status?: number; connection?: string; text: string; port?: number }>(
        (resolve, reject) => {
          const req = request(s.url, { method: 'POST', agent, headers }, (res) => {
            let text = '';
            res.on('data', (c: Buffer) => {
              text += c;
            });
            res.on('end', () =>
              resolve({
                status: res.statusCode,
                connection: res.headers.connection,
                text,
                port: req.socket?.localPort,
              }),
            );
          });
          req.on('error', reject);
          req.end(body);
        },
      );
    const small = '{"OK":true,"Errors":[]}';
    const first = await send({ 'content-length': String(small.length) }, small);
    const second = await send({ 'content-length': String(small.length) }, small);
    expect(first).toMatchObject({
      status: 400,
      connection: 'keep-alive',
      text: expect.stringMatching(/^report rejected: /),
    });
    // The same socket carried both: the first body was read and discarded, not left to reset the connection.
    expect(second).toMatchObject({ status: 400, port: first.port });
    const large = await send(
      { 'content-length': String(FREE_BODY_BYTES + 1) },
      ' '.repeat(FREE_BODY_BYTES + 1),
    );
    expect(large).toMatchObject({ status: 400, connection: 'close' });
    const chunked = await send({ 'transfer-encoding': 'chunked' }, small);
    expect(chunked).toMatchObject({ status: 400, connection: 'close' });
    agent.destroy();
    expect(s.calls()).toBe(0);
  });

  it('answers a bodiless GET (a client waiting for the endpoint) with 200', async () => {
    const s = await start({ key: KEY, unsigned: 'refuse', scope: 'all' });
    const res = await fetch(s.url);
    expect(res.status).toBe(200);
    expect(s.calls()).toBe(0);
  });

  it('answers a bodiless GET of a signed URL it would refuse with 421, of one it would take with 200', async () => {
    const s = await start({ key: KEY, unsigned: 'refuse', scope: 'all' });
    const run = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: Date.now() + 60_000 };
    // Its own key's URL, as the run's checker pod holds it: a client waiting for its endpoint.
    expect((await fetch(signedReportUrl(s.url, KEY, run))).status).toBe(200);
    // Another runner's URL for the same address (that runner died; this one has the address now).
    const theirs = await fetch(signedReportUrl(s.url, randomReportKey(), run));
    expect(theirs.status).toBe(421);
    expect(await theirs.text()).toMatch(/would be rejected here: the token .* signed by another runner/);
    // A URL past its run's deadline would be refused too.
    const late = await fetch(signedReportUrl(s.url, KEY, { ...run, deadlineMs: Date.now() - 1 }));
    expect(late.status).toBe(421);
    expect(s.calls()).toBe(0);
  });
});

describe('the body budget', () => {
  it('gives each request its first bytes free and takes the rest from the budget until it is given back', () => {
    const budget = new BodyBudget(100, 10);
    expect(budget.take(60)).toBe(true);
    expect(budget.take(50)).toBe(false);
    expect(budget.usedBytes).toBe(60);
    budget.give(60);
    expect(budget.take(100)).toBe(true);
  });

  it('answers 503 with Retry-After once the bodies held reach the cap, and takes small reports all the same', async () => {
    const s = await start(
      { key: undefined, unsigned: 'header-and-ip', scope: 'all' },
      { maxBufferedBytes: 64 * 1024 },
    );
    const big = 40 * 1024;
    // Two stalled bodies of 40 KiB each hold (40 - 8) KiB of budget apiece: 64 KiB in all.
    const held = [partial(s.url, big, 1024, 200), partial(s.url, big, 1024, 200)];
    expect(await Promise.all(held)).toEqual([{ text: '' }, { text: '' }]);
    const refused = await partial(s.url, big, 0);
    expect(refused).toMatchObject({ status: 503, retryAfter: '1' });
    expect(refused.text).toMatch(/retry shortly/);
    // A report-sized body needs none of the budget: it is read and handled (here: no such pod, 400).
    const small = await fetch(s.url, { method: 'POST', body: '{"OK":true}'.padEnd(FREE_BODY_BYTES, ' ') });
    expect(small.status).toBe(400);
    expect(await small.text()).toMatch(/no kh-run-uuid header, and no running checker pod/);
  });
});

describe('the connection cap', () => {
  it('drops connections beyond maxConnections at once and serves again when they are gone', async () => {
    const s = await start({ key: KEY, unsigned: 'refuse', scope: 'all' }, { maxConnections: 5 });
    const { port } = new URL(s.url);
    const open = await Promise.all(
      Array.from(
        { length: 5 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(Number(port), '127.0.0.1', () => resolve(socket));
            sockets.push(socket);
          }),
      ),
    );
    const over = await fetch(s.url).then(
      (r) => r.status,
      (e: Error) => e.name,
    );
    expect(over).toBe('TypeError'); // the socket was closed without an answer
    expect(s.log.warn).toHaveBeenCalledWith(
      'connection cap reached: new connections dropped',
      expect.objectContaining({ maxConnections: 5, dropped: 1 }),
    );
    for (const socket of open) socket.destroy();
    await vi.waitFor(async () => expect((await fetch(s.url)).status).toBe(200), { timeout: 2_000 });
  });
});
