import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportFromUrlEvent } from '../../lib/aws/report-event.ts';
import { silentLog } from '../../lib/core/log.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { randomReportKey, reportKeyOf, signedReportUrl } from '../../lib/report/report-token.ts';

// The report Lambda's front: refused requests must be answered at once, without an API request, so a
// flood cannot hold the function for seconds. The "API server" here counts every request it gets and
// knows no khstate.

let apiRequests = 0;
const api = createServer((_req, res) => {
  apiRequests++;
  res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
});
const kc = new KubeConfig();
const KEY = reportKeyOf('k'.repeat(40));
const BASE = 'https://abc.lambda-url.eu-west-1.on.aws/externalCheckStatus';

beforeAll(async () => {
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', () => resolve()));
  const server = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(() => new Promise<void>((resolve) => api.close(() => resolve())));

function event(url: string, headers: Record<string, string> = {}): APIGatewayProxyEventV2 {
  const path = new URL(url).pathname;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers,
    body: '{"OK":true,"Errors":[]}',
    isBase64Encoded: false,
    requestContext: {
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'x' },
    },
  } as unknown as APIGatewayProxyEventV2;
}

const deps = {
  client: kubeClient(kc),
  scope: 'all' as const,
  log: silentLog,
  server: 'lambda-test',
  reportKey: KEY,
};
const run = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: Date.now() + 60_000 };

describe('the report Lambda refuses at once, without an API request', () => {
  it.each([
    ['no token, no header', BASE, {}],
    ['no token, a kh-run-uuid header', BASE, { 'kh-run-uuid': 'u-1' }],
    ['a token of another key', signedReportUrl(BASE, randomReportKey(), run), {}],
    ['a run past its deadline', signedReportUrl(BASE, KEY, { ...run, deadlineMs: Date.now() - 1 }), {}],
    ['a path that is no token', `${BASE}/x`, {}],
  ])('%s', async (_name, url, headers) => {
    const before = apiRequests;
    const started = performance.now();
    const answer = await reportFromUrlEvent(event(url, headers), { ...deps, unsigned: 'refuse' });
    expect(answer.statusCode).toBe(400);
    expect(answer.body).toMatch(/^report rejected: /);
    expect(apiRequests - before).toBe(0);
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('takes a signed URL on to the API server: one khstate read, no pod lookup', async () => {
    const before = apiRequests;
    const answer = await reportFromUrlEvent(event(signedReportUrl(BASE, KEY, run)), {
      ...deps,
      unsigned: 'refuse',
    });
    expect(answer.body).toMatch(/has no khstate/);
    expect(apiRequests - before).toBe(1);
  });
});
