import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { esbuildOptions } from '@khrun/devkit/build/bundle.ts';
import { describe, expect, it } from 'vitest';
import { readServerlessYaml, serverlessFunctions } from '../integration/helpers/serverless-functions.ts';

const root = join(import.meta.dirname, '../..');
const shipped = readFileSync(join(root, 'serverless.yml'), 'utf8');
const standIns = ({ kind, name }: { kind: string; name: string }) => {
  if (kind === 'Ref' && name === 'RunCheckLambdaFunction') return 'khrun-prod-runCheck';
  if (kind === 'GetAtt' && name === 'ReportLambdaFunctionUrl.FunctionUrl') return 'http://10.0.0.1:8080/';
  throw new Error(`no stand-in for ${kind} ${name}`);
};

describe("serverless.yml's functions, resolved as a deploy would", () => {
  it('gives each handler, runtime, timeout and memory of the shipped file', () => {
    const fns = serverlessFunctions(shipped, { resources: standIns });
    expect([...fns.keys()].sort()).toEqual(['report', 'runCheck', 'status', 'tick', 'trigger']);
    expect(fns.get('runCheck')).toMatchObject({
      handler: 'functions/lambda-run-check.handler',
      runtime: 'nodejs22.x',
      timeoutSeconds: 900,
      memoryMb: 512,
    });
    expect(fns.get('tick')?.timeoutSeconds).toBe(50);
    expect(fns.get('report')?.reservedConcurrency).toBe(10);
    expect(fns.get('runCheck')?.reservedConcurrency).toBeUndefined();
    expect(fns.get('report')?.urlAuth).toBe('NONE');
    expect(fns.get('trigger')?.urlAuth).toBe('AWS_IAM');
    expect(fns.get('status')?.urlAuth).toBe('AWS_IAM');
  });

  it('resolves params, their overrides and CloudFormation references through the stand-ins', () => {
    const fns = serverlessFunctions(shipped, { resources: standIns });
    expect(fns.get('runCheck')?.environment).toMatchObject({
      EKS_CLUSTER_NAME: 'khrun-cluster',
      KHRUN_NAMESPACES: '',
      NODE_OPTIONS: '--enable-source-maps',
      KH_EXTERNAL_REPORTING_URL: 'http://10.0.0.1:8080/externalCheckStatus',
      KHRUN_BUDGET_MARGIN_SECONDS: '30',
      KHRUN_REPORT_KEY_PARAMETER: '/khrun/report-key',
    });
    expect(fns.get('tick')?.environment).toMatchObject({
      RUN_CHECK_FUNCTION: 'khrun-prod-runCheck',
      KHRUN_BATCH_SIZE: '50',
    });
    const open = serverlessFunctions(shipped, {
      params: {
        allowUnsignedReports: 'true',
        reportKeyParameter: '',
        namespaces: 'a,b',
        statusPublic: 'true',
      },
      resources: standIns,
    });
    expect(open.get('report')?.environment).toMatchObject({
      KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
      KHRUN_REPORT_KEY_PARAMETER: '',
      KHRUN_NAMESPACES: 'a,b',
    });
    expect(open.get('status')?.urlAuth).toBe('NONE');
    expect(() => serverlessFunctions(shipped, { resources: () => 'x', params: {} })).not.toThrow();
    expect(() =>
      serverlessFunctions(shipped, {
        resources: ({ name }) => {
          throw new Error(`no stand-in for ${name}`);
        },
      }),
    ).toThrow(/no stand-in for RunCheckLambdaFunction|no stand-in for ReportLambdaFunctionUrl/);
  });

  it('reads the variable forms the file uses, and refuses one it cannot resolve', () => {
    // `$` written apart: the file's ${...} variables, not template placeholders.
    const text = [
      'service: svc',
      'params: { default: { mem: 256, name: n } }',
      "provider: { runtime: nodejs22.x, stage: \"$${opt:stage, 'dev'}\", memorySize: 1024, environment: { A: '$${param:name}-$${sls:stage}' } }",
      'functions:',
      '  f: { handler: h.handler, memorySize: "$${param:mem}", environment: { S: "$${self:service}" } }',
      '  g: { handler: g.handler, timeout: 3, environment: { X: "$${env:HOME}" } }',
    ]
      .join('\n')
      .replaceAll('$$', '$');
    expect(() => serverlessFunctions(text, { resources: standIns })).toThrow(
      /\$\{env:HOME\} is not resolved/,
    );
    const fixed = text.replace(/"\$\{env:HOME\}"/, 'plain');
    const fns = serverlessFunctions(fixed, { resources: standIns, stage: 'test' });
    expect(fns.get('f')).toMatchObject({
      memoryMb: 256,
      timeoutSeconds: 6,
      environment: { A: 'n-test', S: 'svc' },
    });
    expect(fns.get('g')).toMatchObject({ memoryMb: 1024, timeoutSeconds: 3, environment: { X: 'plain' } });
    expect(serverlessFunctions(fixed, { resources: standIns }).get('f')?.environment.A).toBe('n-dev');
  });
});

describe("serverless.yml's esbuild options and the project's build", () => {
  it('agree, so the bundles built here are the ones serverless-esbuild packages', () => {
    const custom = (readServerlessYaml(shipped).custom as { esbuild: Record<string, unknown> }).esbuild;
    const ours = esbuildOptions(root, [], 'out');
    expect({
      bundle: custom.bundle,
      minify: custom.minify,
      sourcemap: custom.sourcemap,
      sourcesContent: custom.sourcesContent,
      target: custom.target,
      platform: custom.platform,
      format: custom.format,
      outExtension: { '.js': custom.outputFileExtension },
      mainFields: custom.mainFields,
      banner: custom.banner,
      alias: custom.alias,
    }).toEqual({
      bundle: ours.bundle,
      minify: ours.minify,
      sourcemap: ours.sourcemap,
      sourcesContent: ours.sourcesContent,
      target: ours.target,
      platform: ours.platform,
      format: ours.format,
      outExtension: ours.outExtension,
      mainFields: ours.mainFields,
      banner: ours.banner,
      alias: ours.alias,
    });
    // The project's build leaves out esbuild itself too (the CLI bundle's developer command only).
    expect(ours.external.filter((e) => e !== 'esbuild').sort()).toEqual(
      [...(custom.external as string[])].sort(),
    );
  });
});
