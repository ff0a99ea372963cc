import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkReportFromUrlEvent } from '../../lib/aws/check-event.ts';
import { reportFromUrlEvent } from '../../lib/aws/report-event.ts';
import { silentLog } from '../../lib/core/log.ts';
import { signedCheckUrl } from '../../lib/healthcheck/check-url.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../../lib/report/http-server.ts';
import { reportKeyOf, signedReportUrl } from '../../lib/report/report-token.ts';

// The report Lambda's body limit, on both of its routes (v2's /externalCheckStatus, v3's /check): 256 KiB
// of decoded body at most, judged before any API request; a body of exactly the limit goes on. The "API
// server" counts the requests it gets and knows no object.

let apiRequests = 0;
const api = createServer((_req, res) => {
  apiRequests++;
  res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
});
const kc = new KubeConfig();
const KEY = reportKeyOf('k'.repeat(40));
const RUN = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: Date.now() + 600_000 };
const LIMIT = 256 * 1024;

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

const deps = () => ({
  client: kubeClient(kc),
  scope: 'all' as const,
  log: silentLog,
  server: 'lambda-test',
  reportKey: KEY,
  unsigned: 'refuse' as const,
});

/** A valid report padded with spaces (JSON allows them) to exactly `bytes` bytes. */
const reportOf = (bytes: number) => {
  const report = '{"OK":true,"Errors":[]}';
  return report + ' '.repeat(bytes - report.length);
};

function event(url: string, body: string, opts: { base64?: boolean; headers?: Record<string, string> } = {}) {
  const u = new URL(url);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: u.pathname,
    rawQueryString: u.search.slice(1),
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: opts.base64 ? Buffer.from(body).toString('base64') : body,
    isBase64Encoded: Boolean(opts.base64),
    requestContext: {
      http: {
        method: 'POST',
        path: u.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.9',
        userAgent: 'x',
      },
    },
  } as unknown as APIGatewayProxyEventV2;
}

const ROUTES = [
  {
    name: "v2's /externalCheckStatus",
    send: (body: string, base64?: boolean) =>
      reportFromUrlEvent(
        event(signedReportUrl('https://r.lambda-url.on.aws/externalCheckStatus', KEY, RUN), body, { base64 }),
        deps(),
      ),
  },
  {
    name: "v3's /check",
    send: (body: string, base64?: boolean) =>
      checkReportFromUrlEvent(
        event(signedCheckUrl('https://r.lambda-url.on.aws/check', KEY, RUN), body, {
          base64,
          headers: { 'kh-run-uuid': RUN.uuid },
        }),
        deps(),
      ),
  },
];

describe('the report Lambda body limit', () => {
  it('is 256 KiB', () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(LIMIT);
  });

  describe.each(ROUTES)('$name', ({ send }) => {
    it.each([
      { base64: false, how: 'as text' },
      { base64: true, how: 'base64-encoded (its decoded size counts)' },
    ])('refuses a body one byte over it, $how, before any API request', async ({ base64 }) => {
      const before = apiRequests;
      const answer = await send(reportOf(LIMIT + 1), base64);
      expect(answer).toMatchObject({
        statusCode: 400,
        body: `report rejected: body is over the ${LIMIT}-byte limit\n`,
      });
      expect(apiRequests - before).toBe(0);
    });

    it('takes a body of exactly the limit on to the API server', async () => {
      const before = apiRequests;
      const answer = await send(reportOf(LIMIT));
      expect(answer.body).not.toMatch(/over the .*-byte limit/);
      expect(apiRequests - before).toBeGreaterThan(0);
    });
  });
});
