import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEksCluster, EksDescribeError } from '../../lib/aws/eks-describe.ts';
import { runCheckBatchEventFor, runCheckEventFor } from '../../lib/aws/lambda-invoke.ts';
import { routeReportToCluster } from '../../lib/aws/report-cluster.ts';
import { silentLog } from '../../lib/core/log.ts';
import { checkUrlOf, signedCheckUrl } from '../../lib/healthcheck/check-url.ts';
import { clusterReportUrl, splitClusterPath } from '../../lib/report/cluster-path.ts';
import { reportKeyOf } from '../../lib/report/report-token.ts';
import { gateTrigger } from '../../lib/trigger/gate.ts';
import { triggerFromUrlEvent } from '../../lib/trigger/url-event.ts';

describe('reporting URLs that name their cluster', () => {
  it('v2: a /clusters/<name> prefix, split off again', () => {
    const url = clusterReportUrl('https://r.lambda-url.eu-west-1.on.aws/externalCheckStatus', 'prod-eu');
    expect(url).toBe('https://r.lambda-url.eu-west-1.on.aws/clusters/prod-eu/externalCheckStatus');
    expect(splitClusterPath('/clusters/prod-eu/externalCheckStatus/ns/c/u/1/m')).toEqual({
      cluster: 'prod-eu',
      path: '/externalCheckStatus/ns/c/u/1/m',
    });
    expect(splitClusterPath('/externalCheckStatus')).toEqual({
      cluster: undefined,
      path: '/externalCheckStatus',
    });
    expect(clusterReportUrl('http://h:8080/', 'a')).toBe('http://h:8080/clusters/a');
  });

  it("v3: /check takes no other path, so the cluster rides in the query beside the run's token", () => {
    const check = checkUrlOf('https://r.on.aws/clusters/prod-eu/externalCheckStatus');
    expect(check).toBe('https://r.on.aws/check?cluster=prod-eu');
    const signed = new URL(
      signedCheckUrl(check, reportKeyOf('k'.repeat(32)), {
        namespace: 'n',
        checkName: 'c',
        uuid: 'u',
        deadlineMs: 1,
      }),
    );
    expect(signed.pathname).toBe('/check');
    expect(signed.searchParams.get('cluster')).toBe('prod-eu');
    expect(signed.searchParams.get('khrun')).toMatch(/^\/n\/c\/u\/1\//);
    // One cluster's URL as before.
    expect(checkUrlOf('https://r.on.aws/externalCheckStatus')).toBe('https://r.on.aws/check');
  });

  const event = (rawPath: string, rawQueryString = '') =>
    ({
      rawPath,
      rawQueryString,
      requestContext: { http: { method: 'POST', path: rawPath } },
    }) as APIGatewayProxyEventV2;

  it('the report function routes each report to its cluster, before any API request', () => {
    const v2 = routeReportToCluster(event('/clusters/b/externalCheckStatus/n/c/u/1/m'), ['a', 'b']);
    expect(v2.ok && [v2.cluster, v2.event.rawPath, v2.event.requestContext.http.path]).toEqual([
      'b',
      '/externalCheckStatus/n/c/u/1/m',
      '/externalCheckStatus/n/c/u/1/m',
    ]);
    const v3 = routeReportToCluster(event('/check', 'cluster=a&khrun=x'), ['a', 'b']);
    expect(v3.ok && [v3.cluster, v3.event.rawPath]).toEqual(['a', '/check']);
    const none = routeReportToCluster(event('/externalCheckStatus'), ['a', 'b']);
    expect(!none.ok && [none.response.statusCode, none.response.body]).toEqual([
      404,
      'not found: this report endpoint serves the clusters a, b; POST to the KH_REPORTING_URL the checker pod was given, unchanged\n',
    ]);
    const other = routeReportToCluster(event('/clusters/c/externalCheckStatus'), ['a', 'b']);
    expect(!other.ok && other.response.body).toBe('not found: no cluster "c" is served here\n');
  });

  it("the tick's events name the cluster; one cluster's events are as before", () => {
    const ref = { namespace: 'n', name: 'c', timeoutMs: 1 };
    expect(runCheckEventFor(ref)).toEqual({ kind: 'khcheck', checkName: 'c', namespace: 'n' });
    expect(runCheckEventFor(ref, 'b')).toEqual({
      kind: 'khcheck',
      checkName: 'c',
      namespace: 'n',
      cluster: 'b',
    });
    expect(runCheckBatchEventFor([ref], 'b')).toEqual({
      cluster: 'b',
      checks: [{ kind: 'khcheck', namespace: 'n', checkName: 'c' }],
    });
  });
});

describe('the trigger over several clusters', () => {
  const gate = (query: string, clusters?: string[]) =>
    gateTrigger(
      { auth: { kind: 'iam' }, scope: 'all', canWait: false, clusters },
      { method: 'POST', query, authorization: undefined },
    );

  it('needs a cluster among those served; one cluster takes none', () => {
    expect(gate('cluster=b&namespace=n&check=c', ['a', 'b'])).toEqual({
      ok: true,
      target: { namespace: 'n', checkName: 'c', wait: false, cluster: 'b' },
    });
    expect(gate('namespace=n&check=c', ['a', 'b'])).toMatchObject({
      ok: false,
      status: 400,
      reason:
        'the cluster is required here (one of a, b); POST /api/run?cluster=CLUSTER&namespace=NS&healthcheck=NAME',
    });
    expect(gate('cluster=z&namespace=n&check=c', ['a', 'b'])).toMatchObject({ ok: false, status: 400 });
    expect(gate('cluster=a&namespace=n&check=c')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^unknown parameter "cluster"/),
    });
  });

  it('the trigger Lambda hands the cluster to the runCheck event and says it in the answer', async () => {
    const sent: unknown[] = [];
    const answer = await triggerFromUrlEvent(
      {
        rawPath: '/api/run',
        rawQueryString: 'cluster=b&namespace=n&healthcheck=c',
        requestContext: {
          http: { method: 'POST' },
          authorizer: { iam: { userArn: 'arn:aws:iam::1:user/x' } },
        },
      } as unknown as APIGatewayProxyEventV2,
      {
        scope: 'all',
        clusters: ['a', 'b'],
        log: silentLog,
        dispatch: async (target) => {
          sent.push(target);
          return 'req-1';
        },
      },
    );
    expect(sent).toEqual([{ namespace: 'n', checkName: 'c', cluster: 'b' }]);
    expect(answer.statusCode).toBe(202);
    expect(JSON.parse(answer.body ?? '')).toEqual({
      check: 'n/c',
      cluster: 'b',
      accepted: true,
      invocation: 'req-1',
    });
  });
});

describe("EKS DescribeCluster: a cluster's endpoint and CA", () => {
  let server: ReturnType<typeof createServer>;
  let endpoint: string;
  const seen: IncomingMessage[] = [];
  const answers: Record<string, [number, unknown]> = {
    '/clusters/prod-eu': [
      200,
      {
        cluster: {
          status: 'ACTIVE',
          endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com',
          certificateAuthority: { data: 'Q0E=' },
        },
      },
    ],
    '/clusters/creating': [200, { cluster: { status: 'CREATING' } }],
    '/clusters/gone': [404, { message: 'No cluster found for name: gone.' }],
  };
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req);
      const [status, body] = answers[req.url ?? ''] ?? [500, {}];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());
  const describeIt = (clusterName: string) =>
    describeEksCluster({
      clusterName,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      endpoint,
    });

  it('signs GET /clusters/NAME for service eks and reads endpoint and CA', async () => {
    await expect(describeIt('prod-eu')).resolves.toEqual({
      endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com',
      caData: 'Q0E=',
    });
    const auth = String(seen.at(-1)?.headers.authorization);
    expect(auth).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/eks\/aws4_request, SignedHeaders=[^,]*host/,
    );
  });

  it('a cluster not ACTIVE, or an error answer, is an EksDescribeError naming the cluster', async () => {
    await expect(describeIt('creating')).rejects.toThrow(
      'EKS cluster creating: the cluster is CREATING, not ACTIVE',
    );
    const error = await describeIt('gone').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EksDescribeError);
    expect((error as EksDescribeError).status).toBe(404);
    expect((error as Error).message).toMatch(/^EKS cluster gone: DescribeCluster answered 404: /);
  });
});
