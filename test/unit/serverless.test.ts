import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `osls package` is offline: it resolves serverless.yml, bundles each handler with serverless-esbuild and
// writes the CloudFormation template. Dummy credentials only satisfy the provider's checks.
const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON, read field by field.
type Json = any;
type Resources = Record<string, { Type: string; Properties: Record<string, Json> }>;

async function packageService(
  params: string[],
): Promise<{ dir: string; resources: Resources; template: Json }> {
  const dir = await mkdtemp(join(tmpdir(), 'khrun-sls-'));
  await run(
    process.execPath,
    [join(root, 'node_modules/osls/bin/serverless.js'), 'package', '--package', dir, ...params],
    {
      cwd: root,
      env: {
        ...process.env,
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'dummy',
        AWS_SESSION_TOKEN: '',
        AWS_PROFILE: '',
        SLS_TELEMETRY_DISABLED: '1',
        SLS_NOTIFICATIONS_MODE: 'off',
      },
      timeout: 420_000,
    },
  );
  const template = JSON.parse(await readFile(join(dir, 'cloudformation-template-update-stack.json'), 'utf8'));
  return { dir, resources: template.Resources as Resources, template };
}

const ofType = (r: Resources, type: string) => Object.entries(r).filter(([, v]) => v.Type === type);
type Packaged = { dir: string; resources: Resources; template: Json };
let plain: Packaged;
let custom: Packaged;

/** The function URL of a function. */
const urlOf = (r: Resources, fn: string) =>
  ofType(r, 'AWS::Lambda::Url')
    .map(([, v]) => v.Properties)
    .find((u) => u.TargetFunctionArn['Fn::GetAtt']?.[0] === fn);

/** The resource-policy statements that let anyone (Principal *) call a function. */
const publicPermissions = (r: Resources, fn: string) =>
  ofType(r, 'AWS::Lambda::Permission')
    .map(([, v]) => v.Properties)
    .filter((p) => p.FunctionName['Fn::GetAtt']?.[0] === fn && p.Principal === '*');

beforeAll(async () => {
  // One after the other: serverless-esbuild stages its build in <service>/.esbuild.
  plain = await packageService([]);
  custom = await packageService([
    '--param=vpcFile=infra/aws/vpc.example.yml',
    '--param=schedulesFile=infra/aws/schedules.example.yml',
    '--param=tickEnabled=false',
    '--param=namespaces=kuberhealthy,team-a',
    '--param=statusPublic=true',
    '--param=reportKeyParameter=/team-a/khrun-report-key',
    '--param=reportConcurrency=25',
    '--param=notifyConfigParameter=/team-a/khrun-notify',
  ]);
}, 900_000);
afterAll(async () => {
  for (const p of [plain, custom]) if (p) await rm(p.dir, { recursive: true, force: true });
});

describe('serverless.yml, packaged with osls', () => {
  it('has runCheck, tick, trigger, report and status on nodejs22.x, runCheck with the 900 s maximum', () => {
    const fns = Object.fromEntries(
      ofType(plain.resources, 'AWS::Lambda::Function').map(([k, v]) => [k, v.Properties]),
    );
    expect(Object.keys(fns).sort()).toEqual([
      'ReportLambdaFunction',
      'RunCheckLambdaFunction',
      'StatusLambdaFunction',
      'TickLambdaFunction',
      'TriggerLambdaFunction',
    ]);
    for (const f of Object.values(fns)) expect(f.Runtime).toBe('nodejs22.x');
    expect(fns.RunCheckLambdaFunction?.Timeout).toBe(900);
    expect(fns.RunCheckLambdaFunction?.Handler).toBe('functions/lambda-run-check.handler');
    expect(fns.RunCheckLambdaFunction?.VpcConfig).toBeUndefined();
  });

  it('passes the environment: cluster, report URL for checker pods, runCheck for the tick', () => {
    const env = (name: string) => plain.resources[name]?.Properties.Environment.Variables;
    expect(env('RunCheckLambdaFunction')).toMatchObject({
      EKS_CLUSTER_NAME: 'khrun-cluster',
      EKS_ENDPOINT: expect.stringMatching(/^https:\/\//),
      KHRUN_BUDGET_MARGIN_SECONDS: '30',
      KH_EXTERNAL_REPORTING_URL: {
        'Fn::Join': [
          '',
          [{ 'Fn::GetAtt': ['ReportLambdaFunctionUrl', 'FunctionUrl'] }, 'externalCheckStatus'],
        ],
      },
    });
    expect(env('TickLambdaFunction')).toMatchObject({
      RUN_CHECK_FUNCTION: { Ref: 'RunCheckLambdaFunction' },
    });
    expect(env('TriggerLambdaFunction')).toMatchObject({
      RUN_CHECK_FUNCTION: { Ref: 'RunCheckLambdaFunction' },
    });
    expect(env('ReportLambdaFunction')).toMatchObject({ EKS_CLUSTER_NAME: 'khrun-cluster' });
    expect(custom.resources.RunCheckLambdaFunction?.Properties.Environment.Variables.KHRUN_NAMESPACES).toBe(
      'kuberhealthy,team-a',
    );
  });

  it('never retries asynchronous invocations', () => {
    const configs = Object.fromEntries(
      ofType(plain.resources, 'AWS::Lambda::EventInvokeConfig').map(([, v]) => [
        v.Properties.FunctionName.Ref,
        v.Properties,
      ]),
    );
    expect(configs.RunCheckLambdaFunction).toMatchObject({
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 3600,
    });
    expect(configs.TickLambdaFunction).toMatchObject({ MaximumRetryAttempts: 0 });
  });

  it('ticks every minute', () => {
    const rules = ofType(plain.resources, 'AWS::Events::Rule').map(([, v]) => v.Properties);
    expect(rules).toEqual([
      expect.objectContaining({
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': ['TickLambdaFunction', 'Arn'] } })],
      }),
    ]);
  });

  it('serves report on a function URL with both permissions an AuthType NONE URL needs', () => {
    expect(urlOf(plain.resources, 'ReportLambdaFunction')?.AuthType).toBe('NONE');
    expect(publicPermissions(plain.resources, 'ReportLambdaFunction')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Action: 'lambda:InvokeFunctionUrl',
          Principal: '*',
          FunctionUrlAuthType: 'NONE',
        }),
        expect.objectContaining({
          Action: 'lambda:InvokeFunction',
          Principal: '*',
          InvokedViaFunctionUrl: true,
        }),
      ]),
    );
  });

  it('keeps the status function private (AuthType AWS_IAM, no public permission) unless statusPublic=true', () => {
    expect(urlOf(plain.resources, 'StatusLambdaFunction')?.AuthType).toBe('AWS_IAM');
    expect(publicPermissions(plain.resources, 'StatusLambdaFunction')).toEqual([]);
    expect(urlOf(custom.resources, 'StatusLambdaFunction')?.AuthType).toBe('NONE');
    expect(publicPermissions(custom.resources, 'StatusLambdaFunction')).toHaveLength(2);
  });

  it('reserves concurrency for report and status, so a flood of them cannot take what runCheck and tick need', () => {
    const reserved = (r: Resources, fn: string) => r[fn]?.Properties.ReservedConcurrentExecutions;
    expect(reserved(plain.resources, 'ReportLambdaFunction')).toBe(10);
    expect(reserved(custom.resources, 'ReportLambdaFunction')).toBe(25);
    expect(reserved(plain.resources, 'StatusLambdaFunction')).toBe(2);
    // The others draw on the account's unreserved pool, which report and status can no longer drain.
    for (const fn of ['RunCheckLambdaFunction', 'TickLambdaFunction', 'TriggerLambdaFunction'])
      expect(reserved(plain.resources, fn), fn).toBeUndefined();
  });

  it("gives runCheck and report the report key's SSM parameter, never the key itself, and no other function", () => {
    const env = (r: Resources, fn: string) => r[fn]?.Properties.Environment.Variables;
    for (const fn of ['RunCheckLambdaFunction', 'ReportLambdaFunction']) {
      expect(env(plain.resources, fn).KHRUN_REPORT_KEY_PARAMETER, fn).toBe('/khrun/report-key');
      expect(env(custom.resources, fn).KHRUN_REPORT_KEY_PARAMETER, fn).toBe('/team-a/khrun-report-key');
    }
    for (const [fn] of ofType(plain.resources, 'AWS::Lambda::Function')) {
      expect(env(plain.resources, fn).KHRUN_REPORT_KEY, fn).toBeUndefined();
      expect(env(plain.resources, fn).KHRUN_REPORT_KEY_FILE, fn).toBeUndefined();
    }
    for (const fn of ['TickLambdaFunction', 'TriggerLambdaFunction', 'StatusLambdaFunction'])
      expect(env(plain.resources, fn).KHRUN_REPORT_KEY_PARAMETER, fn).toBeUndefined();
  });

  it('lets runCheck and report read exactly that parameter, and decrypt it only through SSM, when one is named', () => {
    const condition = (t: Json) => t.Conditions.KhrunReadsReportKey['Fn::Not'][0]['Fn::Equals'];
    // Empty (reportKeyParameter: "" in params; osls takes no empty --param): no key and no access.
    expect(condition(plain.template)).toEqual(['/khrun/report-key', '']);
    expect(condition(custom.template)).toEqual(['/team-a/khrun-report-key', '']);
    const arn = (service: string, resource: string) => ({
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          `:${service}:`,
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          resource,
        ],
      ],
    });
    const access = (parameter: string) => {
      const parameterArn = arn('ssm', `:parameter${parameter}`);
      return {
        'Fn::If': [
          'KhrunReadsReportKey',
          {
            PolicyName: 'reportKey',
            PolicyDocument: {
              Version: '2012-10-17',
              Statement: [
                { Effect: 'Allow', Action: 'ssm:GetParameter', Resource: parameterArn },
                {
                  Effect: 'Allow',
                  Action: 'kms:Decrypt',
                  Resource: arn('kms', ':key/*'),
                  Condition: {
                    StringEquals: {
                      'kms:ViaService': {
                        'Fn::Join': ['', ['ssm.', { Ref: 'AWS::Region' }, '.amazonaws.com']],
                      },
                      'kms:EncryptionContext:PARAMETER_ARN': parameterArn,
                    },
                  },
                },
              ],
            },
          },
          { Ref: 'AWS::NoValue' },
        ],
      };
    };
    for (const role of ['KhrunRunCheckRole', 'KhrunReportRole']) {
      expect(plain.resources[role]?.Properties.Policies[1], role).toEqual(access('/khrun/report-key'));
      expect(custom.resources[role]?.Properties.Policies[1], role).toEqual(
        access('/team-a/khrun-report-key'),
      );
    }
    for (const role of ['KhrunTriggerRole', 'KhrunStatusRole'])
      expect(plain.resources[role]?.Properties.Policies, role).toHaveLength(1);
  });

  it('gives runCheck and tick the notification configuration parameter and exactly that parameter to read, when one is named', () => {
    const env = (r: Resources, fn: string) => r[fn]?.Properties.Environment.Variables;
    for (const fn of ['RunCheckLambdaFunction', 'TickLambdaFunction']) {
      expect(env(custom.resources, fn).KHRUN_NOTIFY_CONFIG_PARAMETER, fn).toBe('/team-a/khrun-notify');
      // Empty by default: no notifications (an empty variable counts as unset).
      expect(env(plain.resources, fn).KHRUN_NOTIFY_CONFIG_PARAMETER, fn).toBe('');
    }
    for (const fn of ['ReportLambdaFunction', 'TriggerLambdaFunction', 'StatusLambdaFunction'])
      expect(env(plain.resources, fn)?.KHRUN_NOTIFY_CONFIG_PARAMETER, fn).toBeUndefined();
    const condition = (t: Json) => t.Conditions.KhrunReadsNotifyConfig['Fn::Not'][0]['Fn::Equals'];
    expect(condition(plain.template)).toEqual(['', '']);
    expect(condition(custom.template)).toEqual(['/team-a/khrun-notify', '']);
    const arn = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':ssm:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':parameter/team-a/khrun-notify',
        ],
      ],
    };
    const readsIt = (role: string) => {
      const policies = custom.resources[role]?.Properties.Policies as Json[];
      return policies.filter((p) => p['Fn::If']?.[0] === 'KhrunReadsNotifyConfig').map((p) => p['Fn::If'][1]);
    };
    for (const role of ['KhrunRunCheckRole', 'KhrunTickRole']) {
      const [policy] = readsIt(role);
      expect(policy?.PolicyName, role).toBe('notifyConfig');
      expect(policy?.PolicyDocument.Statement[0], role).toEqual({
        Effect: 'Allow',
        Action: 'ssm:GetParameter',
        Resource: arn,
      });
      expect(
        policy?.PolicyDocument.Statement[1].Condition.StringEquals['kms:EncryptionContext:PARAMETER_ARN'],
        role,
      ).toEqual(arn);
    }
    for (const role of ['KhrunReportRole', 'KhrunTriggerRole', 'KhrunStatusRole'])
      expect(readsIt(role), role).toEqual([]);
  });

  it('deploys the report function failing closed: unsigned reports only when allowUnsignedReports is chosen', () => {
    const env = (r: Resources, fn: string) => r[fn]?.Properties.Environment.Variables;
    expect(env(plain.resources, 'ReportLambdaFunction').KHRUN_ALLOW_UNSIGNED_REPORTS).toBe('false');
    expect(env(custom.resources, 'ReportLambdaFunction').KHRUN_ALLOW_UNSIGNED_REPORTS).toBe('false');
  });

  it('serves the run trigger on a function URL with AuthType AWS_IAM, open to no one', () => {
    const urls = ofType(plain.resources, 'AWS::Lambda::Url')
      .map(([, v]) => v.Properties)
      .filter((u) => u.TargetFunctionArn['Fn::GetAtt']?.[0] === 'TriggerLambdaFunction');
    expect(urls).toEqual([expect.objectContaining({ AuthType: 'AWS_IAM' })]);
    expect(plain.resources.TriggerLambdaFunction?.Properties.Handler).toBe(
      'functions/lambda-trigger.handler',
    );
    // No resource policy lets anyone in: callers need lambda:InvokeFunctionUrl in their own IAM policy.
    const perms = ofType(plain.resources, 'AWS::Lambda::Permission')
      .map(([, v]) => v.Properties)
      .filter((p) => p.FunctionName['Fn::GetAtt']?.[0] === 'TriggerLambdaFunction');
    for (const p of perms) {
      expect(p.Principal).not.toBe('*');
      expect(p.FunctionUrlAuthType).not.toBe('NONE');
    }
  });

  it('gives each function its own role, with a stable name and only what it needs', () => {
    // No shared role: the internet-facing report and status functions hold nothing runCheck or tick hold.
    expect(plain.resources.IamRoleLambdaExecution).toBeUndefined();
    const roles = Object.fromEntries(ofType(plain.resources, 'AWS::IAM::Role'));
    const fns: Record<string, string> = {
      RunCheckLambdaFunction: 'runCheck',
      TickLambdaFunction: 'tick',
      TriggerLambdaFunction: 'trigger',
      ReportLambdaFunction: 'report',
      StatusLambdaFunction: 'status',
    };
    const invokeRunCheck = {
      Effect: 'Allow',
      Action: 'lambda:InvokeFunction',
      Resource: { 'Fn::GetAtt': ['RunCheckLambdaFunction', 'Arn'] },
    };
    const seen = new Set<string>();
    for (const [fn, short] of Object.entries(fns)) {
      const ref = plain.resources[fn]?.Properties.Role['Fn::GetAtt'];
      expect(ref?.[1], fn).toBe('Arn');
      const role = roles[ref[0]]?.Properties;
      seen.add(ref[0]);
      expect(role?.RoleName, fn).toBe(`khrun-prod-${short}`);
      expect(role?.AssumeRolePolicyDocument.Statement).toEqual([
        { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
      ]);
      // The first policy is the function's own; the report key's (conditional) is checked above.
      const statements = role?.Policies[0].PolicyDocument.Statement;
      const logs = {
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':logs:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              `:log-group:/aws/lambda/khrun-prod-${short}:*`,
            ],
          ],
        },
      };
      // Only its own log group; only tick and trigger may start runCheck.
      expect(statements, fn).toEqual(
        short === 'tick' || short === 'trigger' ? [logs, invokeRunCheck] : [logs],
      );
    }
    expect(seen.size).toBe(5);
  });

  it('adds the ENI rights a VPC needs only when the functions run in one', () => {
    const condition = (t: Json) => t.Conditions.KhrunInVpc['Fn::Not'][0]['Fn::Equals'];
    expect(condition(plain.template)).toEqual(['', '']);
    expect(condition(custom.template)).toEqual(['subnet-0123456789abcdef0', '']);
    for (const [, role] of ofType(plain.resources, 'AWS::IAM::Role'))
      expect(role.Properties.ManagedPolicyArns['Fn::If'][0]).toBe('KhrunInVpc');
  });

  it('takes VPC settings and per-check schedules as options', () => {
    const fn = custom.resources.RunCheckLambdaFunction?.Properties;
    expect(fn?.VpcConfig).toEqual({
      SecurityGroupIds: ['sg-0123456789abcdef0'],
      SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
    });
    const rules = ofType(custom.resources, 'AWS::Events::Rule').map(([, v]) => v.Properties);
    expect(rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ ScheduleExpression: 'rate(1 minute)', State: 'DISABLED' }),
        expect.objectContaining({
          Name: 'khrun-example-success',
          ScheduleExpression: 'rate(5 minutes)',
          Targets: [
            expect.objectContaining({
              Input: JSON.stringify({ checkName: 'example-success', namespace: 'khrun' }),
            }),
          ],
        }),
      ]),
    );
    const schedule = ofType(custom.resources, 'AWS::Scheduler::Schedule')[0]?.[1];
    expect(schedule?.Properties).toMatchObject({
      ScheduleExpressionTimezone: 'Etc/UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
    });
    expect(JSON.parse(schedule?.Properties.Target.Input)).toEqual({
      checkName: 'example-failure',
      namespace: 'khrun',
    });
  });

  it('ships each function as its own ESM bundle', async () => {
    // A zip's central directory lists its entries' names in plain text.
    const zip = await readFile(join(plain.dir, 'runCheck.zip'));
    expect(zip.includes('functions/lambda-run-check.mjs')).toBe(true);
    expect(zip.includes('functions/lambda-run-check.mjs.map')).toBe(true);
    expect(zip.includes('lambda-tick')).toBe(false);
  });
});
