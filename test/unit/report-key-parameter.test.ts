import { afterAll, describe, expect, it } from 'vitest';
import {
  type ParameterReader,
  ReportKeyParameterError,
  reportKeyFromParameter,
} from '../../lib/aws/report-key-parameter.ts';
import { lambdaRunPlan } from '../../lib/config/batch-options.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaReportOptions } from '../../lib/config/lambda-report-options.ts';
import { reportSettings } from '../../lib/config/report-address.ts';
import { reportKey } from '../../lib/config/report-key.ts';
import { reportKeyParameter } from '../../lib/config/report-key-parameter.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { NO_FLAGS } from '../../lib/config/setting.ts';
import { type ReportKey, signedReportUrl } from '../../lib/report/report-token.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// KHRUN_REPORT_KEY_PARAMETER: the Lambda functions read the report key from an SSM SecureString parameter
// at run time. The read is the port (ssm-parameter.test.ts runs the real one); here a fake stands in.

const ctx = kubeconfigFile();
afterAll(() => ctx.remove());
const KEY = 'c0ffee'.repeat(8);
const PARAM = '/khrun/report-key';
const RUN = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: 1 };
const input = (env: Record<string, string>) => ({ flags: {}, env, flagLabel: NO_FLAGS });
const LAMBDA_ENV = {
  KUBECONFIG: ctx.path,
  EKS_CLUSTER_NAME: 'c',
  EKS_ENDPOINT: 'https://example.eks.amazonaws.com',
  KH_EXTERNAL_REPORTING_URL: 'https://r.lambda-url.eu-west-1.on.aws/externalCheckStatus',
};

/** A ParameterReader over a fixed map, counting its reads. */
function fakeSsm(values: Record<string, string>) {
  const reads: string[] = [];
  const read: ParameterReader = async (name) => {
    reads.push(name);
    const value = values[name];
    if (value === undefined)
      throw Object.assign(new Error(`Parameter ${name} not found.`), { name: 'ParameterNotFound' });
    return value;
  };
  return { read, reads };
}

/** Rejects as Powertools does: its GetParameterError, the SDK's error as the cause. */
const failing =
  (sdkName: string, message = 'refused'): ParameterReader =>
  async () => {
    const sdk = Object.assign(new Error(message), { name: sdkName });
    throw Object.assign(new Error(message, { cause: sdk }), { name: 'GetParameterError' });
  };

const sign = (key: ReportKey | undefined) => {
  if (!key) throw new Error('no key');
  return signedReportUrl('http://x/externalCheckStatus', key, RUN);
};

async function rejection<T extends Error>(p: Promise<unknown>, type: new (...a: never[]) => T): Promise<T> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error instanceof type) return error;
  throw new Error(`expected a ${type.name}, got ${String(error)}`);
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('KHRUN_REPORT_KEY_PARAMETER', () => {
  it('is unset by default (and when empty, as serverless.yml writes no parameter): nothing is read', async () => {
    const ssm = fakeSsm({});
    expect(await reportKeyFromParameter({}, ssm.read)).toBeUndefined();
    expect(await reportKeyFromParameter({ KHRUN_REPORT_KEY_PARAMETER: '' }, ssm.read)).toBeUndefined();
    expect(ssm.reads).toEqual([]);
  });

  it('reads the named parameter; its key reaches the report and runCheck options, signing as KHRUN_REPORT_KEY does', async () => {
    const ssm = fakeSsm({ [PARAM]: `${KEY}\n` });
    const env = { ...LAMBDA_ENV, KHRUN_REPORT_KEY_PARAMETER: PARAM };
    const keyParameter = await reportKeyFromParameter(env, ssm.read);
    expect(ssm.reads).toEqual([PARAM]);
    expect(keyParameter).toEqual({ parameter: PARAM, text: `${KEY}\n` });
    const inline = sign(reportKey(input({ KHRUN_REPORT_KEY: KEY })));
    const report = lambdaReportOptions({ env, keyParameter });
    expect(sign(report.reportKey)).toBe(inline);
    expect(report.unsigned).toBe('refuse');
    const one = lambdaRunPlan({ event: { checkName: 'dns', namespace: 'checks' }, env, keyParameter });
    expect(sign(one.options.report.key)).toBe(inline);
    const batch = lambdaRunPlan({
      event: { checks: [{ kind: 'khcheck', namespace: 'checks', checkName: 'dns' }] },
      env,
      keyParameter,
    });
    expect(batch.kind).toBe('batch');
    expect(sign(batch.options.report.key)).toBe(inline);
  });

  it.each([
    ['/khrun/report-key'],
    ['report-key'],
    ['arn:aws:ssm:eu-west-1:123456789012:parameter/khrun/report-key'],
  ])('takes a parameter name or ARN: %s', (name) => {
    expect(reportKeyParameter(input({ KHRUN_REPORT_KEY_PARAMETER: name }))).toBe(name);
  });

  it.each([['/khrun/report key'], ['$(openssl rand -hex 32)']])('refuses %j as no parameter name', (name) => {
    const error = configError(() => reportKeyParameter(input({ KHRUN_REPORT_KEY_PARAMETER: name })));
    expect(error.setting).toBe('KHRUN_REPORT_KEY_PARAMETER');
    expect(error.problem).toBe('is no SSM parameter name');
  });

  it.each([
    ['KHRUN_REPORT_KEY', KEY],
    ['KHRUN_REPORT_KEY_FILE', '/run/secrets/key'],
  ])('set with %s is a ConfigError saying which to drop, before anything is read', async (other, value) => {
    const ssm = fakeSsm({ [PARAM]: KEY });
    const env = { KHRUN_REPORT_KEY_PARAMETER: PARAM, [other]: value };
    const error = await rejection(reportKeyFromParameter(env, ssm.read), ConfigError);
    expect(error.setting).toBe('KHRUN_REPORT_KEY_PARAMETER');
    expect(error.problem).toBe(`and ${other} are both set`);
    expect(error.remedy).toMatch(new RegExp(`^unset ${other}: the key is read from the SSM parameter`));
    expect(error.message).not.toContain(KEY);
    expect(ssm.reads).toEqual([]);
    // The options builders refuse the same, whatever the handler passed.
    expect(configError(() => reportKey(input(env), { parameter: PARAM, text: KEY })).problem).toBe(
      `and ${other} are both set`,
    );
  });

  it.each([
    ['short', /holds a key of 5 characters, too short to be a secret/],
    [`${KEY} ${KEY}`, /holds a key with spaces or characters outside printable ASCII/],
  ])(
    'a bad value %#: a ConfigError naming the parameter and how to replace it, never the key',
    (text, problem) => {
      const env = { ...LAMBDA_ENV, KHRUN_REPORT_KEY_PARAMETER: PARAM };
      const error = configError(() => lambdaReportOptions({ env, keyParameter: { parameter: PARAM, text } }));
      expect(error.setting).toBe('the SSM parameter /khrun/report-key (KHRUN_REPORT_KEY_PARAMETER)');
      expect(error.problem).toMatch(problem);
      expect(error.remedy).toContain(
        'aws ssm put-parameter --name /khrun/report-key --type SecureString --overwrite --value "$(openssl rand -hex 32)"',
      );
      expect(error.message).not.toContain(KEY);
      expect(
        configError(() =>
          lambdaRunPlan({ event: { checkName: 'dns' }, env, keyParameter: { parameter: PARAM, text } }),
        ).setting,
      ).toBe(error.setting);
    },
  );

  it('is refused where nothing reads SSM (the CLI, khrun serve): no run goes unsigned for want of the key', () => {
    const env = {
      KHRUN_REPORT_KEY_PARAMETER: PARAM,
      KH_EXTERNAL_REPORTING_URL: 'http://s/externalCheckStatus',
    };
    const run = configError(() => reportSettings(input(env)));
    expect(run.setting).toBe('KHRUN_REPORT_KEY_PARAMETER');
    expect(run.problem).toBe('is read only by the runCheck and report Lambda functions');
    expect(run.remedy).toMatch(/KHRUN_REPORT_KEY_FILE \(a mounted Secret\) or KHRUN_REPORT_KEY/);
    expect(
      configError(() => serveOptions({ flags: {}, env: { KUBECONFIG: ctx.path, ...env } })).setting,
    ).toBe('KHRUN_REPORT_KEY_PARAMETER');
  });

  it('the report function fails closed when it was not handed the text, even with unsigned reports allowed', () => {
    const env = { ...LAMBDA_ENV, KHRUN_REPORT_KEY_PARAMETER: PARAM, KHRUN_ALLOW_UNSIGNED_REPORTS: 'true' };
    expect(configError(() => lambdaReportOptions({ env })).setting).toBe('KHRUN_REPORT_KEY_PARAMETER');
    expect(
      configError(() => lambdaReportOptions({ env, keyParameter: { parameter: '/other', text: KEY } }))
        .setting,
    ).toBe('KHRUN_REPORT_KEY_PARAMETER');
  });
});

describe('a parameter that cannot be read fails the invocation, saying what to do', () => {
  const env = { KHRUN_REPORT_KEY_PARAMETER: PARAM };

  it.each([
    [
      'ParameterNotFound',
      'not-found',
      'does not exist in this account and region',
      'aws ssm put-parameter --name /khrun/report-key --type SecureString --value "$(openssl rand -hex 32)"',
    ],
    [
      'AccessDeniedException',
      'access-denied',
      'may not read the SSM parameter',
      'ssm:GetParameter on the parameter and kms:Decrypt',
    ],
    ['InvalidKeyId', 'key-unusable', 'KMS key', '--overwrite'],
    ['ThrottlingException', 'other', 'cannot be read', 'AWS_REGION'],
  ])('%s: %s', async (sdkName, failure, problem, remedy) => {
    const error = await rejection(
      reportKeyFromParameter(env, failing(sdkName, 'no')),
      ReportKeyParameterError,
    );
    expect(error).toMatchObject({
      name: 'ReportKeyParameterError',
      parameter: PARAM,
      failure,
      code: sdkName,
    });
    expect(error.message).toMatch(/^KHRUN_REPORT_KEY_PARAMETER="\/khrun\/report-key": /);
    expect(error.message).toContain(problem);
    expect(error.message).toContain(`(${sdkName}: no)`);
    expect(error.message).toContain(remedy);
    expect((error.cause as Error).name).toBe('GetParameterError');
  });

  it("Powertools' own not-found (a parameter without a value) is not-found too; a non-Error is other", async () => {
    const missing: ParameterReader = async () => {
      throw Object.assign(new Error('Parameter /khrun/report-key not found in the store'), {
        name: 'ParameterNotFoundError',
      });
    };
    expect(await rejection(reportKeyFromParameter(env, missing), ReportKeyParameterError)).toMatchObject({
      failure: 'not-found',
    });
    const odd: ParameterReader = () => Promise.reject('boom');
    const error = await rejection(reportKeyFromParameter(env, odd), ReportKeyParameterError);
    expect(error).toMatchObject({ failure: 'other', code: undefined });
    expect(error.message).toContain('(boom)');
  });

  it('bounds the SDK message it quotes', async () => {
    const error = await rejection(
      reportKeyFromParameter(env, failing('AccessDeniedException', 'x'.repeat(5_000))),
      ReportKeyParameterError,
    );
    expect(error.message.length).toBeLessThan(1_000);
  });
});
