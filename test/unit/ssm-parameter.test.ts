import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ReportKeyParameterError, reportKeyFromParameter } from '../../lib/aws/report-key-parameter.ts';
import { PARAMETER_MAX_AGE_SECONDS, ssmParameterReader } from '../../lib/aws/ssm-parameter.ts';
import { lambdaRunPlan } from '../../lib/config/batch-options.ts';
import { lambdaReportOptions } from '../../lib/config/lambda-report-options.ts';
import { reportKey } from '../../lib/config/report-key.ts';
import { NO_FLAGS } from '../../lib/config/setting.ts';
import { type ReportKey, signedReportUrl } from '../../lib/report/report-token.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// The real SSM client, through Powertools' SSMProvider, against a stand-in for SSM's JSON 1.1 API on
// 127.0.0.1: what the library sends, how its answers and errors reach the options. Credentials and region
// come from the environment, as in a Lambda; nothing leaves the machine.

const PARAM = '/khrun/report-key';
const KEY = 'c0ffee'.repeat(8);
const ROTATED = 'decade'.repeat(8);
const RUN = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: 1 };

interface Seen {
  target: string | undefined;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/** What the stand-in holds and answers: a value, or an SSM error (its __type) with its status. */
let answer: { value: string } | { error: string; status: number } = { value: KEY };
const seen: Seen[] = [];
let server: Server;
let endpoint: string;

const AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  AWS_REGION: 'eu-west-1',
};
// Anything else the SDK could pick up instead (a profile, a session token, another endpoint).
const CLEARED = [
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_DEFAULT_REGION',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_SSM',
];
const saved = new Map<string, string | undefined>();
const ctx = kubeconfigFile();

beforeAll(async () => {
  for (const name of [...Object.keys(AWS_ENV), ...CLEARED]) saved.set(name, process.env[name]);
  Object.assign(process.env, AWS_ENV);
  for (const name of CLEARED) delete process.env[name];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = req.headers['x-amz-target'];
      seen.push({
        target: typeof target === 'string' ? target : undefined,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'),
        headers: req.headers,
      });
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      if ('error' in answer) {
        res.statusCode = answer.status;
        res.end(JSON.stringify({ __type: answer.error, message: `${answer.error} for ${PARAM}` }));
        return;
      }
      res.end(
        JSON.stringify({
          Parameter: {
            Name: PARAM,
            Type: 'SecureString',
            Value: answer.value,
            Version: 1,
            ARN: `arn:aws:ssm:eu-west-1:123456789012:parameter${PARAM}`,
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => {
  vi.useRealTimers();
  seen.length = 0;
  answer = { value: KEY };
});
afterAll(async () => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
  ctx.remove();
});

const reader = () => ssmParameterReader({ clientConfig: { endpoint, maxAttempts: 1 } });
const env = {
  KUBECONFIG: ctx.path,
  EKS_CLUSTER_NAME: 'c',
  EKS_ENDPOINT: 'https://example.eks.amazonaws.com',
  KH_EXTERNAL_REPORTING_URL: 'https://r.lambda-url.eu-west-1.on.aws/externalCheckStatus',
  KHRUN_REPORT_KEY_PARAMETER: PARAM,
};
const sign = (key: ReportKey | undefined) => {
  if (!key) throw new Error('no key');
  return signedReportUrl('http://x/externalCheckStatus', key, RUN);
};
const signedWith = (text: string) =>
  sign(reportKey({ flags: {}, env: { KHRUN_REPORT_KEY: text }, flagLabel: NO_FLAGS }));

describe('the SSM parameter reader (Powertools SSMProvider, the real SSM client)', () => {
  it('sends GetParameter with the name and WithDecryption, signed with the environment credentials for its region', async () => {
    const read = reader();
    expect(await read(PARAM)).toBe(KEY);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.target).toBe('AmazonSSM.GetParameter');
    expect(seen[0]?.body).toEqual({ Name: PARAM, WithDecryption: true });
    expect(seen[0]?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/ssm\/aws4_request, /,
    );
  });

  it("hands the key to the report and runCheck functions' options", async () => {
    const read = reader();
    const keyParameter = await reportKeyFromParameter(env, read);
    const report = lambdaReportOptions({ env, keyParameter });
    expect(sign(report.reportKey)).toBe(signedWith(KEY));
    const plan = lambdaRunPlan({ event: { checkName: 'dns', namespace: 'checks' }, env, keyParameter });
    expect(sign(plan.options.report.key)).toBe(signedWith(KEY));
    // One GetParameter for both: the second read came from the cache.
    expect(seen).toHaveLength(1);
  });

  it(`keeps a value ${PARAMETER_MAX_AGE_SECONDS} s, then reads it again: a rotated key reaches a warm function`, async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const read = reader();
    expect(await read(PARAM)).toBe(KEY);
    answer = { value: ROTATED };
    vi.setSystemTime(Date.now() + (PARAMETER_MAX_AGE_SECONDS - 1) * 1_000);
    expect(await read(PARAM)).toBe(KEY);
    expect(seen).toHaveLength(1);
    vi.setSystemTime(Date.now() + 2_000);
    expect(await read(PARAM)).toBe(ROTATED);
    expect(seen).toHaveLength(2);
  });

  // Powertools turns SSM's ParameterNotFound into its own ParameterNotFoundError (throwOnMissing).
  it.each([
    [
      'ParameterNotFound',
      'not-found',
      'ParameterNotFoundError',
      'aws ssm put-parameter --name /khrun/report-key --type SecureString',
    ],
    ['AccessDeniedException', 'access-denied', 'AccessDeniedException', 'ssm:GetParameter'],
  ])('%s from SSM fails the read clearly, and is not cached', async (error, failure, code, remedy) => {
    answer = { error, status: 400 };
    const read = reader();
    const refused = await reportKeyFromParameter(env, read).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ReportKeyParameterError);
    expect(refused).toMatchObject({ parameter: PARAM, failure, code });
    expect((refused as Error).message).toContain(remedy);
    expect((refused as Error).message).toContain(`(${code}: `);
    answer = { value: KEY };
    expect(await reportKeyFromParameter(env, read)).toEqual({ parameter: PARAM, text: KEY });
    expect(seen).toHaveLength(2);
  });

  it('sends nothing when no parameter is named', async () => {
    reader();
    expect(
      await reportKeyFromParameter({ ...env, KHRUN_REPORT_KEY_PARAMETER: '' }, reader()),
    ).toBeUndefined();
    expect(seen).toEqual([]);
  });
});
