import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serveCommand } from '../../lib/commands/serve.ts';
import { silentLog } from '../../lib/core/log.ts';
import { signedCheckUrl } from '../../lib/healthcheck/check-url.ts';
import type { RunningServer } from '../../lib/report/http-server.ts';
import { reportKeyOf, signedReportUrl } from '../../lib/report/report-token.ts';
import { openSession } from '../../lib/session/session.ts';

// The 256 KiB report body limit where nobody configured one, on every endpoint that hosts the routes:
// a runner's own (openSession: v2's route and v3's /check) and `khrun serve`'s /check. A declared body one
// byte over it is refused before a byte of it is read and before any API request; one of exactly the limit
// gets past the limit. The API server is an in-process fake that counts requests and knows no object.

const KEY = reportKeyOf('s'.repeat(40));
const served = vi.hoisted(() => ({ url: '' }));
// The session signs with a key of its own: here a known one, so the test can sign as its pods would.
vi.mock('../../lib/report/report-token.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../lib/report/report-token.ts')>();
  return { ...actual, randomReportKey: () => actual.reportKeyOf('s'.repeat(40)) };
});
// Where the session's endpoint listens (port 0): taken from the server it starts.
vi.mock('../../lib/report/http-server.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../lib/report/http-server.ts')>();
  return {
    ...actual,
    startReportServer: async (
      ...args: Parameters<typeof actual.startReportServer>
    ): Promise<RunningServer> => {
      const server = await actual.startReportServer(...args);
      served.url = server.url;
      return server;
    },
  };
});

const LIMIT = 256 * 1024;
let apiRequests = 0;
const api = createServer((_req, res) => {
  apiRequests++;
  res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
});
const kc = new KubeConfig();
const RUN = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: Date.now() + 600_000 };

beforeAll(async () => {
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', () => resolve()));
  kc.loadFromOptions({
    clusters: [
      { name: 'c', server: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, skipTLSVerify: true },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(() => new Promise<void>((resolve) => api.close(() => resolve())));

/** Sends only the headers of a POST declaring `bytes` of body; resolves with the answer. */
function declare(url: string, bytes: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': bytes, 'kh-run-uuid': RUN.uuid },
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c;
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.once('error', reject);
    req.flushHeaders();
  });
}

/** Sends a whole body of exactly `bytes` (a report padded with spaces). */
function send(url: string, bytes: number): Promise<{ status: number; text: string }> {
  const report = '{"OK":true,"Errors":[]}';
  const body = report + ' '.repeat(bytes - report.length);
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'kh-run-uuid': RUN.uuid },
    body,
  }).then(async (r) => ({ status: r.status, text: await r.text() }));
}

const routes = (base: string) => [
  ['/externalCheckStatus', signedReportUrl(`${base}/externalCheckStatus`, KEY, RUN)],
  ['/check', signedCheckUrl(`${base}/check`, KEY, RUN)],
];

async function expectLimit(url: string) {
  const before = apiRequests;
  const over = await declare(url, LIMIT + 1);
  expect(over.status).toBe(400);
  expect(over.text).toMatch(`body of ${LIMIT + 1} bytes is over the ${LIMIT}-byte limit`);
  expect(apiRequests - before, 'no API request for a refused body').toBe(0);
  const at = await send(url, LIMIT);
  expect(at.text).not.toMatch(/-byte limit/);
}

describe('the report body limit nobody configured is 256 KiB', () => {
  it.each(['/externalCheckStatus', '/check'])(
    "on a runner's own endpoint (openSession): %s",
    async (path) => {
      const session = await openSession({
        kc,
        runner: 'runner-a',
        report: { kind: 'hosted', host: '127.0.0.1', port: 0 },
        log: silentLog,
        namespaces: ['checks'],
      });
      try {
        const base = new URL(served.url).origin;
        const url = routes(base).find(([p]) => p === path)?.[1] ?? '';
        await expectLimit(url);
      } finally {
        await session.close();
      }
    },
  );

  it("on khrun serve's /check", async () => {
    const stop = new AbortController();
    let line = '';
    const serving = serveCommand({
      kc,
      scope: { namespaces: ['checks'] },
      host: '127.0.0.1',
      port: 0,
      identity: 'serve-test',
      reportKey: KEY,
      unsigned: 'refuse',
      drainMs: 1_000,
      status: false,
      log: silentLog,
      signal: stop.signal,
      write: (l) => {
        line += l;
      },
    });
    try {
      await vi.waitFor(() => expect(line).toMatch(/reports at /), { timeout: 10_000 });
      const base = new URL(/reports at (http:\/\/\S+)/.exec(line)?.[1] ?? '').origin;
      await expectLimit(routes(base).find(([p]) => p === '/check')?.[1] ?? '');
    } finally {
      stop.abort();
      await serving;
    }
  }, 20_000);
});
