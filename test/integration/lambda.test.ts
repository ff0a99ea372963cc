import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { APIGatewayProxyEventV2, Context, ScheduledEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { KHJOB_PLURAL, type KhJob } from '../../lib/job/khjob.ts';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { buildTestBundles } from './helpers/deploy.ts';
import { goCheckerV3Binary } from './helpers/go-checker-v3.ts';
import { createCheck, nodeContainer, readState } from './helpers/khrun.ts';

// The Lambda handlers, as bundled, invoked locally with the events AWS sends them, against the local
// cluster: EventBridge's scheduled event to tick; tick's asynchronous Invoke (received by a stand-in for
// the Lambda API that runs runCheck); runCheck's checker pod reporting to a stand-in for the report
// function's URL, which turns each request into the function URL event (payload 2.0); the trigger's
// IAM-authenticated function URL event, handed to runCheck through the same Invoke API.

// biome-ignore lint/suspicious/noExplicitAny: each handler returns its own JSON shape; tests read fields.
type Handler<E> = (event: E, context: Context) => Promise<any>;
const kc = adminKubeConfig();
let ns: string;
let tick: Handler<ScheduledEvent>;
let runCheck: Handler<unknown>;
let report: Handler<APIGatewayProxyEventV2>;
let status: Handler<APIGatewayProxyEventV2>;
let trigger: Handler<APIGatewayProxyEventV2>;
let lambdaApi: Server;
/** A checker built on Kuberhealthy v3.0.0's Go checkclient: `success`, `fail MESSAGE`. */
let v3Checker: string;
let functionUrl: Server;
const invocations: Array<{
  headers: IncomingMessage['headers'];
  path?: string;
  event: unknown;
  result: ReturnType<Handler<unknown>>;
}> = [];
const savedEnv = { ...process.env };
let requestCount = 0;

function context(functionName: string, remainingMs = 60_000): Context {
  const deadline = Date.now() + remainingMs;
  const awsRequestId = `req-${++requestCount}`;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2026/01/01/[$LATEST]abc',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done() {},
    fail() {},
    succeed() {},
  };
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c;
    });
    req.on('end', () => resolve(body));
  });

async function listen(server: Server, host: string): Promise<string> {
  await new Promise<void>((r) => server.listen(0, host, r));
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  let dist: string;
  [dist, ns, v3Checker] = await Promise.all([
    buildTestBundles(),
    freshNamespace(kc, 'lambda'),
    goCheckerV3Binary(),
  ]);
  // Lambda's Invoke API: 202 at once, then the function runs (as an asynchronous invocation does).
  lambdaApi = createServer(async (req, res) => {
    const event = JSON.parse(await readBody(req));
    res.writeHead(202, { 'x-amzn-RequestId': `async-${requestCount + 1}` }).end();
    invocations.push({
      headers: req.headers,
      path: req.url,
      event,
      result: runCheck(event, context('khrun-test-runCheck', 120_000)),
    });
  });
  // The report function's URL, reachable from checker pods on the pod network.
  functionUrl = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readBody(req);
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      requestContext: {
        accountId: 'anonymous',
        apiId: 'abc123',
        domainName: 'abc123.lambda-url.eu-west-1.on.aws',
        domainPrefix: 'abc123',
        http: {
          method: req.method ?? 'GET',
          path: url.pathname,
          protocol: 'HTTP/1.1',
          sourceIp: req.socket.remoteAddress ?? '',
          userAgent: String(req.headers['user-agent']),
        },
        requestId: 'r',
        routeKey: '$default',
        stage: '$default',
        time: new Date().toISOString(),
        timeEpoch: Date.now(),
      },
      body,
      isBase64Encoded: false,
    } as APIGatewayProxyEventV2;
    const result = await report(event, context('khrun-test-report', 20_000));
    res.writeHead(result.statusCode, result.headers as Record<string, string>).end(result.body);
  });
  const lambdaEndpoint = await listen(lambdaApi, '127.0.0.1');
  const reportUrl = `${await listen(functionUrl, inject('hostIp'))}/externalCheckStatus`;
  Object.assign(process.env, {
    KUBECONFIG: inject('kubeconfigPath'),
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'test-secret',
    RUN_CHECK_FUNCTION: 'khrun-test-runCheck',
    KHRUN_LAMBDA_ENDPOINT: lambdaEndpoint,
    KH_EXTERNAL_REPORTING_URL: reportUrl,
    KHRUN_NAMESPACES: ns,
    KHRUN_BUDGET_MARGIN_SECONDS: '1',
    KHRUN_FIRST_RUN_JITTER: '0s',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    // The report function's unsigned reports (the signed ones set KHRUN_REPORT_KEY below).
    KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
  });
  const load = async (name: string) => (await import(pathToFileURL(join(dist, `${name}.mjs`)).href)).handler;
  [tick, runCheck, report, status, trigger] = await Promise.all([
    load('lambda-tick'),
    load('lambda-run-check'),
    load('lambda-report'),
    load('lambda-status'),
    load('lambda-trigger'),
  ]);
}, 180_000);

afterAll(async () => {
  lambdaApi?.close();
  functionUrl?.close();
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
  await dropNamespace(kc, ns);
});

/** EventBridge's scheduled event, as the tick's rule sends it. */
function scheduledEvent(): ScheduledEvent {
  return {
    version: '0',
    id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'eu-west-1',
    resources: ['arn:aws:events:eu-west-1:123456789012:rule/khrun-prod-tick'],
    detail: {},
  };
}

/** A checker that reports like Kuberhealthy v2.5+'s Go client: with the kh-run-uuid header. */
function headerReporter(delayMs: number) {
  return nodeContainer(
    `setTimeout(async () => {
       const res = await fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) });
       console.log('report', res.status, await res.text());
     }, ${delayMs});`,
  );
}

describe('Lambda handlers against the local cluster', () => {
  it('tick (scheduled event) invokes runCheck asynchronously; the check reports to the report function URL', async () => {
    await createCheck(
      kc,
      ns,
      'via-lambda',
      { containers: [headerReporter(0)] },
      { runInterval: '5m', timeout: '60s' },
    );
    const scheduled: ScheduledEvent = {
      version: '0',
      id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '123456789012',
      time: new Date().toISOString(),
      region: 'eu-west-1',
      resources: ['arn:aws:events:eu-west-1:123456789012:rule/khrun-prod-tick'],
      detail: {},
    };
    const ticked = await tick(scheduled, context('khrun-test-tick'));
    expect(ticked.dispatched).toEqual([`${ns}/via-lambda`]);
    expect(invocations).toHaveLength(1);
    const [invocation] = invocations;
    expect(invocation?.path).toBe('/2015-03-31/functions/khrun-test-runCheck/invocations');
    expect(invocation?.headers['x-amz-invocation-type']).toBe('Event');
    expect(String(invocation?.headers.authorization)).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request/,
    );
    const result = await invocation!.result;
    expect(result).toMatchObject({
      check: `${ns}/via-lambda`,
      result: 'recorded',
      kind: 'Succeeded',
      ok: true,
    });
    const state = await readState(kc, ns, 'via-lambda');
    expect(state?.spec.AuthoritativePod).toMatch(/^lambda-req-\d+$/);
    // The next scheduled tick finds nothing due.
    expect((await tick(scheduled, context('khrun-test-tick'))).dispatched).toEqual([]);
  }, 120_000);

  it('a run that does not fit the invocation is left resumable and finished by the next one', async () => {
    await createCheck(
      kc,
      ns,
      'slow',
      { containers: [headerReporter(6_000)] },
      { runInterval: '5m', timeout: '60s' },
    );
    // `aws lambda invoke --payload '{"checkName":"slow","namespace":"..."}'`, with 3 s left (1 s margin).
    const first = await runCheck({ checkName: 'slow', namespace: ns }, context('khrun-test-runCheck', 3_000));
    expect(first).toMatchObject({ result: 'interrupted' });
    expect(readLastOutcome(await readState(kc, ns, 'slow'))).toBeUndefined();
    const second = await runCheck(
      { checkName: 'slow', namespace: ns },
      context('khrun-test-runCheck', 60_000),
    );
    expect(second).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
  }, 120_000);

  it('trigger (function URL, AWS_IAM) hands POST /api/run to runCheck asynchronously and answers 202', async () => {
    await createCheck(
      kc,
      ns,
      'via-trigger',
      { containers: [headerReporter(0)] },
      { runInterval: '5m', timeout: '60s' },
    );
    const urlEvent = (query: string, iam: boolean, method = 'POST') =>
      ({
        version: '2.0',
        routeKey: '$default',
        rawPath: '/api/run',
        rawQueryString: query,
        headers: {
          authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/eu-west-1/lambda/aws4_request',
        },
        isBase64Encoded: false,
        requestContext: {
          http: {
            method,
            path: '/api/run',
            protocol: 'HTTP/1.1',
            sourceIp: '203.0.113.9',
            userAgent: 'curl',
          },
          // What Lambda puts here once it has verified the SigV4 signature of an AWS_IAM function URL.
          ...(iam
            ? {
                authorizer: {
                  iam: {
                    accessKey: 'AKIDEXAMPLE',
                    accountId: '123456789012',
                    callerId: 'AROAEXAMPLE:gha',
                    cognitoIdentity: null,
                    principalOrgId: '',
                    userArn: 'arn:aws:sts::123456789012:assumed-role/khrun-trigger/gha',
                    userId: 'AROAEXAMPLE:gha',
                  },
                },
              }
            : {}),
        },
      }) as unknown as APIGatewayProxyEventV2;
    const before = invocations.length;

    // Refused before anything is invoked: no IAM identity (a URL deployed with NONE), a bad name, GET.
    const open = await trigger(
      urlEvent(`namespace=${ns}&healthcheck=via-trigger`, false),
      context('khrun-test-trigger'),
    );
    expect(open.statusCode).toBe(401);
    expect(
      (
        await trigger(
          urlEvent(`namespace=${ns}&healthcheck=Via_Trigger`, true),
          context('khrun-test-trigger'),
        )
      ).statusCode,
    ).toBe(400);
    expect(
      (
        await trigger(
          urlEvent(`namespace=${ns}&healthcheck=via-trigger`, true, 'GET'),
          context('khrun-test-trigger'),
        )
      ).statusCode,
    ).toBe(405);
    expect(
      (
        await trigger(
          urlEvent('namespace=kube-system&healthcheck=via-trigger', true),
          context('khrun-test-trigger'),
        )
      ).statusCode,
    ).toBe(403);
    expect(invocations).toHaveLength(before);

    const accepted = await trigger(
      urlEvent(`namespace=${ns}&healthcheck=via-trigger`, true),
      context('khrun-test-trigger'),
    );
    expect(accepted.statusCode).toBe(202);
    expect(JSON.parse(accepted.body ?? '')).toEqual({
      check: `${ns}/via-trigger`,
      accepted: true,
      invocation: expect.stringMatching(/^async-/),
    });
    expect(invocations).toHaveLength(before + 1);
    const invocation = invocations.at(-1);
    expect(invocation?.path).toBe('/2015-03-31/functions/khrun-test-runCheck/invocations');
    expect(invocation?.headers['x-amz-invocation-type']).toBe('Event');
    expect(await invocation?.result).toMatchObject({
      check: `${ns}/via-trigger`,
      result: 'recorded',
      kind: 'Succeeded',
    });
    expect(readLastOutcome(await readState(kc, ns, 'via-trigger'))).toMatchObject({ kind: 'Succeeded' });
  }, 120_000);

  it('report answers like the report endpoint: GET 200, other paths 404, malformed bodies 400', async () => {
    const base = {
      version: '2.0',
      routeKey: '$default',
      rawQueryString: '',
      headers: {},
      isBase64Encoded: false,
    };
    const http = (method: string, path: string) => ({
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'test' },
    });
    const call = (method: string, rawPath: string, body?: string) =>
      report(
        {
          ...base,
          rawPath,
          body,
          requestContext: http(method, rawPath),
        } as unknown as APIGatewayProxyEventV2,
        context('khrun-test-report'),
      );
    expect((await call('GET', '/externalCheckStatus')).statusCode).toBe(200);
    expect((await call('POST', '/somewhere')).statusCode).toBe(404);
    const malformed = await call('POST', '/externalCheckStatus', '{"OK": tru');
    expect(malformed.statusCode).toBe(400);
    const base64 = await report(
      {
        ...base,
        rawPath: '/externalCheckStatus',
        body: Buffer.from('{"OK": false, "Errors": []}').toString('base64'),
        isBase64Encoded: true,
        requestContext: http('POST', '/externalCheckStatus'),
      } as unknown as APIGatewayProxyEventV2,
      context('khrun-test-report'),
    );
    expect(base64.statusCode).toBe(400);
    expect(base64.body).toMatch(/report rejected/);
  });

  it("status serves v2's status JSON, the page and the metrics of the namespace, listed live", async () => {
    const call = (rawPath: string, accept = 'application/json', body?: string) =>
      status(
        {
          version: '2.0',
          routeKey: '$default',
          rawPath,
          rawQueryString: '',
          headers: { accept },
          body,
          isBase64Encoded: false,
          requestContext: {
            http: {
              method: body ? 'POST' : 'GET',
              path: rawPath,
              protocol: 'HTTP/1.1',
              sourceIp: '203.0.113.9',
              userAgent: 'test',
            },
          },
        } as unknown as APIGatewayProxyEventV2,
        context('khrun-test-status'),
      );
    const json = await call('/');
    expect(json.statusCode).toBe(200);
    const parsed = JSON.parse(json.body) as {
      OK: boolean;
      CheckDetails: Record<string, unknown>;
      CurrentMaster: string;
    };
    expect(Object.keys(parsed.CheckDetails).some((k) => k.startsWith(`${ns}/`))).toBe(true);
    expect(parsed.CurrentMaster).toBe('lambda-khrun-test-status');
    expect((await call('/status', 'text/html')).headers?.['content-type']).toMatch(/text\/html/);
    expect((await call('/metrics', 'text/plain')).body).toContain('kuberhealthy_cluster_state');
    expect((await call('/', 'application/json', '{"OK":true}')).statusCode).toBe(400);
  });
  it('tick sends a HealthCheck and a khjob to runCheck with their kind; each is run as its kind, the HealthCheck reporting to the report function at /check', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const hcApi = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL, namespace: ns };
    const jobApi = { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL, namespace: ns };
    // Signed reporting URLs (deployed from the SSM parameter reportKeyParameter): runCheck signs, report checks.
    process.env.KHRUN_REPORT_KEY = randomBytes(24).toString('base64url');
    try {
      await custom.createNamespacedCustomObject({
        ...hcApi,
        body: {
          apiVersion: HC_API_VERSION,
          kind: 'HealthCheck',
          metadata: { name: 'hc-lambda', namespace: ns },
          spec: {
            runInterval: '10m',
            timeout: '60s',
            podSpec: {
              spec: {
                containers: [{ name: 'check', image: 'example/v3-check:1', command: [v3Checker, 'success'] }],
              },
            },
          },
        } satisfies HealthCheck,
      });
      await custom.createNamespacedCustomObject({
        ...jobApi,
        body: {
          apiVersion: `${KH_GROUP}/${KH_VERSION}`,
          kind: 'KuberhealthyJob',
          metadata: { name: 'job-lambda', namespace: ns },
          spec: { timeout: '60s', podSpec: { containers: [headerReporter(0)] } },
        },
      });
      const before = invocations.length;
      const ticked = await tick(scheduledEvent(), context('khrun-test-tick'));
      expect([...ticked.dispatched].sort()).toEqual([
        `healthcheck/${ns}/hc-lambda`,
        `khjob/${ns}/job-lambda`,
      ]);
      const sent = invocations.slice(before);
      expect(sent.map((i) => i.event)).toEqual(
        expect.arrayContaining([
          { kind: 'healthcheck', checkName: 'hc-lambda', namespace: ns },
          { kind: 'khjob', checkName: 'job-lambda', namespace: ns },
        ]),
      );
      const results = await Promise.all(sent.map((i) => i.result));
      expect(results).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            check: `${ns}/hc-lambda`,
            result: 'recorded',
            kind: 'Succeeded',
            ok: true,
          }),
          expect.objectContaining({
            check: `${ns}/job-lambda`,
            result: 'recorded',
            kind: 'Succeeded',
            ok: true,
          }),
        ]),
      );
      // The HealthCheck's result is in its status as v3 writes it; its pod reported to /check, signed.
      const hc = (await custom.getNamespacedCustomObject({ ...hcApi, name: 'hc-lambda' })) as HealthCheck;
      expect(hc.status).toMatchObject({ ok: true, currentUUID: '', successCount: 1, namespace: ns });
      const pods = await kc
        .makeApiClient(CoreV1Api)
        .listNamespacedPod({ namespace: ns, labelSelector: 'healthcheck=hc-lambda' });
      const env = Object.fromEntries(
        (pods.items[0]?.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']),
      );
      const reportingUrl = new URL(env.KH_REPORTING_URL ?? '');
      expect(reportingUrl.pathname).toBe('/check');
      expect(reportingUrl.searchParams.get('khrun')).toMatch(/^\//);
      // The khjob ran once and is Completed, as v2 records it.
      const job = (await custom.getNamespacedCustomObject({ ...jobApi, name: 'job-lambda' })) as KhJob;
      expect(job.spec.phase).toBe('Completed');
      expect(readLastOutcome(await readState(kc, ns, 'job-lambda'))).toMatchObject({ kind: 'Succeeded' });
      // Nothing is due any more: a khjob runs once, the HealthCheck at its interval.
      expect((await tick(scheduledEvent(), context('khrun-test-tick'))).dispatched).toEqual([]);
      // By hand (`aws lambda invoke`): the khjob again is nothing to do; a missing HealthCheck is not-found.
      expect(
        await runCheck(
          { kind: 'khjob', checkName: 'job-lambda', namespace: ns },
          context('khrun-test-runCheck'),
        ),
      ).toMatchObject({ check: `${ns}/job-lambda`, result: 'already-ran' });
      expect(
        await runCheck(
          { kind: 'healthcheck', checkName: 'nope', namespace: ns },
          context('khrun-test-runCheck'),
        ),
      ).toMatchObject({
        check: `${ns}/nope`,
        result: 'not-found',
        reason: expect.stringMatching(/HealthCheck/),
      });
    } finally {
      delete process.env.KHRUN_REPORT_KEY;
    }
  }, 180_000);

  it('runCheck runs a batch event: each khcheck its own iteration in one invocation, one entry per check', async () => {
    for (const name of ['batch-a', 'batch-b'])
      await createCheck(
        kc,
        ns,
        name,
        { containers: [headerReporter(0)] },
        { runInterval: '5m', timeout: '60s' },
      );
    const checks = ['batch-a', 'batch-gone', 'batch-b'].map((checkName) => ({
      kind: 'khcheck',
      namespace: ns,
      checkName,
    }));
    const result = await runCheck({ checks }, context('khrun-test-runCheck', 60_000));
    expect(result).toEqual({
      checks: [
        expect.objectContaining({ check: `${ns}/batch-a`, result: 'recorded', kind: 'Succeeded', ok: true }),
        {
          check: `${ns}/batch-gone`,
          result: 'not-found',
          reason: expect.stringMatching(/batch-gone not found/),
        },
        expect.objectContaining({ check: `${ns}/batch-b`, result: 'recorded', kind: 'Succeeded', ok: true }),
      ],
    });
    const [a, b] = await Promise.all([readState(kc, ns, 'batch-a'), readState(kc, ns, 'batch-b')]);
    expect(a?.spec.AuthoritativePod).toMatch(/^lambda-req-\d+$/);
    expect(b?.spec.AuthoritativePod, 'both run by the one invocation').toBe(a?.spec.AuthoritativePod);
    await expect(
      runCheck(
        { checks: [{ kind: 'khjob', namespace: ns, checkName: 'j' }] },
        context('khrun-test-runCheck'),
      ),
    ).rejects.toThrow(/"checks\[0\]" in the event: names a kind other than khcheck/);
  }, 120_000);

  it('runCheck refuses a bad event with what was wrong, before any API request', async () => {
    const before = invocations.length;
    await expect(
      runCheck(
        { kind: 'HealthCheck', checkName: 'hc-lambda', namespace: ns },
        context('khrun-test-runCheck'),
      ),
    ).rejects.toThrow(/"kind" in the event.*names no kind khrun runs \(khcheck, khjob, healthcheck\)/);
    await expect(
      runCheck({ checkName: 'hc-lambda', namspace: ns }, context('khrun-test-runCheck')),
    ).rejects.toThrow(/"namspace" in the event.*not a field of the runCheck event/);
    expect(invocations).toHaveLength(before);
  });

  it("report serves v3's POST /check: its refusals before any API request, a bare report looked up by its UUID", async () => {
    const call = (method: string, headers: Record<string, string>, body: string, query = '') =>
      report(
        {
          version: '2.0',
          routeKey: '$default',
          rawPath: '/check',
          rawQueryString: query,
          headers,
          body,
          isBase64Encoded: false,
          requestContext: {
            http: { method, path: '/check', protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'Go' },
          },
        } as unknown as APIGatewayProxyEventV2,
        context('khrun-test-report'),
      );
    const json = {
      'content-type': 'application/json',
      'kh-run-uuid': 'f0000000-0000-4000-8000-000000000000',
    };
    const ok = JSON.stringify({ ok: true, errors: [] });
    expect((await call('GET', json, '')).statusCode).toBe(405);
    expect((await call('POST', { 'kh-run-uuid': 'x' }, ok)).statusCode).toBe(415);
    const noUuid = await call('POST', { 'content-type': 'application/json' }, ok);
    expect(noUuid.statusCode).toBe(400);
    expect(noUuid.body).toMatch(/kh-run-uuid/);
    expect((await call('POST', json, ok, 'khrun=/x')).statusCode).toBe(400);
    // v3's rule on the body: ok with errors is refused.
    const both = await call('POST', json, JSON.stringify({ ok: true, errors: ['e'] }));
    expect(both.statusCode).toBe(400);
    expect(both.body).toMatch(/"ok" is true but "errors" is not empty/);
    // No key here: a bare report is looked up among the HealthChecks by its UUID, which names no run.
    const unknown = await call('POST', json, ok);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toMatch(/invalid or expired/);
  });
});
