import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DEFAULT_MAX_BODY_BYTES,
  type RunningServer,
  startReportServer,
} from '../../lib/report/http-server.ts';
import { BodyBudget, BodyRefused, readBody } from '../../lib/report/read-body.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { settle } from './fakes/manual-scheduler.ts';

// The report body limits: a declared Content-Length over the limit is refused before a byte is read, a
// streamed (chunked) body is refused once it passes the limit, and the report server's limit is 256 KiB
// unless configured. readBody runs on in-memory streams; the default is checked on the server (127.0.0.1).

const LIMIT = 1_000;

/** A request stream with the given headers, and a response that closes when the test says. */
function exchange(headers: Record<string, string> = {}) {
  const req = Object.assign(new PassThrough(), { headers }) as unknown as IncomingMessage & PassThrough;
  const res = new EventEmitter() as unknown as ServerResponse;
  return { req, res, close: () => (res as unknown as EventEmitter).emit('close') };
}

describe('readBody', () => {
  it.each([
    { declared: LIMIT, refused: false },
    { declared: LIMIT + 1, refused: true },
  ])(
    'judges a declared Content-Length of $declared bytes against a 1000-byte limit before reading',
    async ({ declared, refused }) => {
      // Prepare: headers only, no body byte sent yet.
      const { req, res } = exchange({ 'content-length': String(declared) });
      const budget = new BodyBudget(10 * LIMIT, 0);
      // Act
      const reading = readBody(req, res, LIMIT, budget);
      let early: unknown = 'waiting';
      reading.then(
        () => {
          early = 'read';
        },
        (error: unknown) => {
          early = error;
        },
      );
      await settle();
      // Assess
      if (refused) {
        expect(early).toBeInstanceOf(BodyRefused);
        expect(early).toMatchObject({
          status: 400,
          message: `body of ${declared} bytes is over the ${LIMIT}-byte limit`,
        });
        expect(budget.usedBytes).toBe(0);
      } else {
        expect(early).toBe('waiting');
        expect(budget.usedBytes).toBe(declared);
        req.end(Buffer.alloc(declared, 'a'));
        await expect(reading).resolves.toHaveLength(declared);
      }
    },
  );

  it.each([
    { sent: LIMIT, refused: false },
    { sent: LIMIT + 1, refused: true },
  ])('judges a streamed body of $sent bytes (no Content-Length) as it arrives', async ({ sent, refused }) => {
    // Prepare
    const { req, res } = exchange({ 'transfer-encoding': 'chunked' });
    const budget = new BodyBudget(10 * LIMIT, 0);
    const reading = readBody(req, res, LIMIT, budget);
    // Act: in two chunks, the second one crossing the limit when sent > LIMIT.
    req.write(Buffer.alloc(LIMIT / 2, 'a'));
    req.write(Buffer.alloc(sent - LIMIT / 2, 'b'));
    req.end();
    // Assess
    if (refused) {
      await expect(reading).rejects.toMatchObject({
        name: 'BodyRefused',
        status: 400,
        message: `body is over the ${LIMIT}-byte limit`,
      });
      // Only the bytes within the limit were ever taken from the budget.
      expect(budget.usedBytes).toBeLessThanOrEqual(LIMIT);
    } else {
      await expect(reading).resolves.toBe(`${'a'.repeat(LIMIT / 2)}${'b'.repeat(LIMIT / 2)}`);
    }
  });

  it('gives the budget back once the response is done', async () => {
    // Prepare
    const { req, res, close } = exchange({ 'content-length': '600' });
    const budget = new BodyBudget(10 * LIMIT, 100);
    const reading = readBody(req, res, LIMIT, budget);
    req.end(Buffer.alloc(600, 'a'));
    await reading;
    // Act
    const heldBefore = budget.usedBytes;
    close();
    // Assess: the first 100 bytes were free, the other 500 held until the response closed.
    expect(heldBefore).toBe(500);
    expect(budget.usedBytes).toBe(0);
  });
});

describe('the report server body limit', () => {
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start() {
    const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() };
    server = await startReportServer(
      {
        lookup: { podsByRunId: async () => [], livePodsByIp: async () => [] },
        state: { read: async () => newKhState('dns', 'checks'), replace: async (s: KhState) => s },
        clock: { nowMs: () => Date.now() },
        log,
        server: 'test',
      },
      { host: '127.0.0.1', port: 0, access: { key: undefined, unsigned: 'header-and-ip', scope: 'all' } },
    );
    return server.url;
  }

  it('is 256 KiB unless configured', () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(256 * 1024);
  });

  it.each([
    { bytes: 256 * 1024, overLimit: false },
    { bytes: 256 * 1024 + 1, overLimit: true },
  ])('takes a body of $bytes bytes as over the limit: $overLimit', async ({ bytes, overLimit }) => {
    // Prepare: a valid report padded to the size; read, it is judged (no such pod here: 400 for that).
    const url = await start();
    const body = '{"OK":true}'.padEnd(bytes, ' ');
    // Act
    const res = await fetch(url, { method: 'POST', body });
    const text = await res.text();
    // Assess
    expect(res.status).toBe(400);
    if (overLimit) expect(text).toMatch(`body of ${bytes} bytes is over the 262144-byte limit`);
    else expect(text).not.toMatch(/over the .*limit/);
  });
});
