import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { LambdaRuntimeParts } from '@khrun/devkit/lambda/emulator-binaries.ts';
import { functionUrlEvent } from '@khrun/devkit/lambda/function-url.ts';
import { type FunctionInvocation, lambdaFunction } from '@khrun/devkit/lambda/lambda-function.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readActiveRun, readLastOutcome } from '../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import {
  applyDeploy,
  DEPLOY_NAMESPACE,
  kubectl,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './helpers/deploy.ts';
import { createCheck, nodeContainer, readState, repoRoot } from './helpers/khrun.ts';
import {
  buildLambdaPackage,
  deployedName,
  type KhrunLambdas,
  lambdaRuntimeParts,
  startKhrunLambdas,
} from './helpers/lambda-runtime.ts';

// khrun's Lambda functions run as AWS runs them: the handlers' bundles in the package layout, each function
// in AWS's Runtime Interface Emulator (built from the Go module proxy) with Node 22 and aws-lambda-ric (the
// Node runtime interface client), started with serverless.yml's handler string, environment, timeout and
// memory, and invoked over the emulator's invoke API against the local cluster. Each function reaches the
// cluster with only the rights docs/install.md binds to its role: runCheck the runner's ClusterRole, tick
// the tick's, report the report server's, status list on khstates and HealthChecks, trigger nothing (each a
// ServiceAccount here, where EKS maps the function's role to a group). Local stand-ins, where AWS's
// emulator has none: the cluster access (a ServiceAccount's kubeconfig instead of the EKS token),
// the report key (KHRUN_REPORT_KEY, with reportKeyParameter empty, instead of the SSM parameter), the report
// function's URL (helpers of @khrun/devkit/lambda/function-url.ts) and Lambda's Invoke API for the
// asynchronous invocations of tick and trigger (invoke-api.ts).

const kc = adminKubeConfig();
const reportKey = randomBytes(24).toString('base64url');
let ns: string;
let parts: LambdaRuntimeParts;
let taskRoot: string;
/** serverless.yml's defaults, the report key as KHRUN_REPORT_KEY: signed reporting URLs only. */
let signed: KhrunLambdas;
const started: KhrunLambdas[] = [];
/** Each function's cluster access: KUBECONFIG of its identity, none for trigger. */
let access: Overrides;
type Overrides = NonNullable<Parameters<typeof startKhrunLambdas>[0]['overrides']>;

const logDir = join(repoRoot, '.khrun/lambda-runtime-logs');
const baseEnv = () => ({
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'test-secret',
  KHRUN_FIRST_RUN_JITTER: '0s',
  // No AWS SDK call leaves the machine: an endpoint not set here is a closed local port.
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
  AWS_EC2_METADATA_DISABLED: 'true',
});

async function lambdas(
  opts: Partial<Parameters<typeof startKhrunLambdas>[0]> & { environment?: Record<string, string> },
): Promise<KhrunLambdas> {
  const overrides: Overrides = { ...access };
  for (const fn of Object.keys(opts.overrides ?? {}) as Array<keyof Overrides>) {
    const o = opts.overrides?.[fn];
    overrides[fn] = { ...o, environment: { ...access[fn]?.environment, ...o?.environment } };
  }
  const l = await startKhrunLambdas({
    parts,
    taskRoot,
    logDir: join(logDir, String(started.length + 1)),
    reportHost: inject('hostIp'),
    ...opts,
    overrides,
    params: { namespaces: ns, reportKeyParameter: '', ...opts.params },
    environment: { ...baseEnv(), ...opts.environment },
  });
  started.push(l);
  return l;
}

/** kubectl create of something an earlier run made already is fine; any other failure is not. */
const existing = (error: Error) => {
  if (!/AlreadyExists|already exists/.test(error.message)) throw error;
  return '';
};

/** A kubeconfig of a ServiceAccount of infra/deploy (or one made here), in DEPLOY_NAMESPACE. */
async function identity(name: string): Promise<{ environment: Record<string, string> }> {
  const path = await writeKubeConfig(
    await serviceAccountKubeConfig(kc, DEPLOY_NAMESPACE, name),
    `lambda-runtime-${name}`,
  );
  return { environment: { KUBECONFIG: path } };
}

beforeAll(async () => {
  [parts, taskRoot, ns] = await Promise.all([
    lambdaRuntimeParts((line) => console.log(`[lambda runtime] ${line}`)),
    buildLambdaPackage(join(repoRoot, '.khrun/lambda-package')),
    freshNamespace(kc, 'lambda-rt'),
    // The ClusterRoles the functions are bound to; the in-cluster tick suspended (the Lambda tick ticks).
    applyDeploy({ name: 'lambda-runtime', components: ['serve'], suspend: ['khrun-tick'] }),
  ]);
  // status: docs/install.md's own commands, for a ServiceAccount instead of the role's group.
  await kubectl(['create', 'serviceaccount', 'khrun-lambda-status', '-n', DEPLOY_NAMESPACE]).catch(existing);
  await kubectl([
    'create',
    'clusterrole',
    'khrun-status',
    '--verb=list',
    '--resource=khstates.comcast.github.io,healthchecks.kuberhealthy.github.io',
  ]).catch(existing);
  await kubectl([
    'create',
    'clusterrolebinding',
    'khrun-lambda-status',
    '--clusterrole=khrun-status',
    `--serviceaccount=${DEPLOY_NAMESPACE}:khrun-lambda-status`,
  ]).catch(existing);
  access = {
    runCheck: await identity('khrun-runner'),
    tick: await identity('khrun-tick'),
    report: await identity('khrun-server'),
    status: await identity('khrun-lambda-status'),
    trigger: { environment: { KUBECONFIG: undefined } },
  };
  signed = await lambdas({ environment: { KHRUN_REPORT_KEY: reportKey } });
}, 1_800_000);

afterAll(async () => {
  await Promise.all(started.map((l) => l.stop()));
  if (ns) await dropNamespace(kc, ns);
});

/** A checker that reports success after delayMs, as Kuberhealthy's v2 clients do (kh-run-uuid header). */
function reporter(delayMs: number) {
  return nodeContainer(
    `setTimeout(async () => {
       const res = await fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) });
       console.log('report', res.status, await res.text());
     }, ${delayMs});`,
  );
}

const check = (name: string, delayMs = 0, timeout = '60s') =>
  createCheck(kc, ns, name, { containers: [reporter(delayMs)] }, { runInterval: '1h', timeout });

describe('the Lambda bundles in AWS runtime interface emulator, through aws-lambda-ric', () => {
  it('runCheck records a check on the local cluster; its checker reports to the report function URL, signed', async () => {
    await check('rt-one');
    const runCheck = signed.fn('runCheck');
    const first = await runCheck.invoke({ checkName: 'rt-one', namespace: ns });
    expect(first.functionError, first.body).toBeUndefined();
    expect(first.payload).toMatchObject({
      check: `${ns}/rt-one`,
      result: 'recorded',
      kind: 'Succeeded',
      ok: true,
    });
    // The context is the runtime's: the request id the emulator was invoked with names the runner.
    const state = await readState(kc, ns, 'rt-one');
    expect(state?.spec.AuthoritativePod).toBe(`lambda-${first.requestId}`);
    // A new execution environment (the cold start), with serverless.yml's memory.
    expect(first).toMatchObject({ newEnvironment: true, runtimeStarted: true });
    expect(first.report?.memorySizeMb).toBe(512);
    // The checker reported through the function URL: a report invocation whose URL carried the signature.
    const reports = await Promise.all(signed.fn('report').invocations);
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.at(-1)?.payload).toMatchObject({ statusCode: 200 });
    // The same environment, warm.
    const again = await runCheck.invoke({ checkName: 'rt-missing', namespace: ns });
    expect(again).toMatchObject({ newEnvironment: false, runtimeStarted: false });
    expect(again.payload).toMatchObject({ check: `${ns}/rt-missing`, result: 'not-found' });
  }, 300_000);

  it('runCheck runs a batch event in one invocation, one entry per check', async () => {
    await Promise.all([check('rt-batch-a'), check('rt-batch-b')]);
    const checks = ['rt-batch-a', 'rt-batch-gone', 'rt-batch-b'].map((checkName) => ({
      kind: 'khcheck',
      namespace: ns,
      checkName,
    }));
    const inv = await signed.fn('runCheck').invoke({ checks });
    expect(inv.payload).toEqual({
      checks: [
        expect.objectContaining({ check: `${ns}/rt-batch-a`, result: 'recorded', kind: 'Succeeded' }),
        expect.objectContaining({ check: `${ns}/rt-batch-gone`, result: 'not-found' }),
        expect.objectContaining({ check: `${ns}/rt-batch-b`, result: 'recorded', kind: 'Succeeded' }),
      ],
    });
    const [a, b] = await Promise.all([readState(kc, ns, 'rt-batch-a'), readState(kc, ns, 'rt-batch-b')]);
    expect(a?.spec.AuthoritativePod).toBe(`lambda-${inv.requestId}`);
    expect(b?.spec.AuthoritativePod).toBe(`lambda-${inv.requestId}`);
  }, 300_000);

  it('errors surface as the runtime reports them: its error document, errorType and errorMessage', async () => {
    const bad = await signed.fn('runCheck').invoke({ kind: 'HealthCheck', checkName: 'x', namespace: ns });
    expect(bad.payload).toBeUndefined();
    expect(bad.functionError).toMatchObject({
      errorType: 'ConfigError',
      errorMessage: expect.stringMatching(/"kind" in the event/),
    });
    // serverless.yml as shipped: the report key lives in SSM (reportKeyParameter). Unreadable here (its
    // endpoint is a closed local port), so the invocation fails with the reason, never runs unsigned.
    const ssm = await lambdas({
      params: { reportKeyParameter: '/khrun/report-key' },
      environment: { AWS_ENDPOINT_URL_SSM: 'http://127.0.0.1:9', AWS_MAX_ATTEMPTS: '1' },
    });
    const noKey = await ssm.fn('runCheck').invoke({ checkName: 'rt-one', namespace: ns });
    expect(noKey.functionError).toMatchObject({
      errorType: 'ReportKeyParameterError',
      errorMessage: expect.stringMatching(/KHRUN_REPORT_KEY_PARAMETER="\/khrun\/report-key"/),
    });
    const url = await fetch(`${ssm.reportUrl}externalCheckStatus`, { method: 'POST', body: '{}' });
    expect(url.status).toBe(502);
    // A handler string that names no module: the runtime's init error, and the emulator's 502.
    const wrong = lambdaFunction({
      parts,
      taskRoot,
      logDir,
      config: { ...signed.fn('status').config, handler: 'functions/lambda-statuz.handler' },
    });
    try {
      const init = await wrong.invoke({});
      expect(init.statusCode).toBe(502);
      expect(init.functionError).toMatchObject({ errorType: 'Runtime.ImportModuleError' });
    } finally {
      await wrong.stop();
    }
  }, 300_000);

  it('a run longer than the time left stops before the timeout and is adopted by the next invocations', async () => {
    await check('rt-budget', 8_000);
    // serverless.yml's margin (30 s) of a 33 s timeout: 3 s per invocation for a check that reports at 8 s.
    const short = await lambdas({
      environment: { KHRUN_REPORT_KEY: reportKey },
      overrides: { runCheck: { timeoutSeconds: 33 } },
    });
    const results: FunctionInvocation[] = [];
    for (let i = 0; i < 12; i++) {
      const inv = await short.fn('runCheck').invoke({ checkName: 'rt-budget', namespace: ns });
      results.push(inv);
      if ((inv.payload as { result?: string } | undefined)?.result !== 'interrupted') break;
    }
    expect(results[0]?.payload).toMatchObject({ result: 'interrupted' });
    expect(results.every((r) => !r.timedOut && !r.functionError)).toBe(true);
    expect(results.at(-1)?.payload).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
  }, 300_000);

  it('the runtime enforces the timeout: the killed run stays adoptable and the next invocation finishes it', async () => {
    // The checker reports 12 s after it starts, so after the first invocation's 10 s have run out.
    await check('rt-killed', 12_000);
    // No margin: khrun's own stop would come at the deadline, after the runtime has ended the invocation.
    const killer = await lambdas({
      environment: { KHRUN_REPORT_KEY: reportKey, KHRUN_LEASE_SECONDS: '5' },
      overrides: { runCheck: { timeoutSeconds: 10, environment: { KHRUN_BUDGET_MARGIN_SECONDS: '0' } } },
    });
    const runCheck = killer.fn('runCheck');
    const first = await runCheck.invoke({ checkName: 'rt-killed', namespace: ns });
    expect(first.timedOut, first.body).toBe(true);
    expect(first.body).toBe('Task timed out after 10.00 seconds');
    const left = await readState(kc, ns, 'rt-killed');
    expect(readLastOutcome(left)).toBeUndefined();
    expect(readActiveRun(left)).toMatchObject({ runner: `lambda-${first.requestId}` });
    const runUuid = readActiveRun(left)?.uuid;
    expect(runUuid).toBeTruthy();
    // The next invocations: while the killed invocation's lease holds, the run is busy (it might still be
    // alive, for all the next one knows); once the lease has lapsed, the next adopts the run and the
    // checker's report finishes it. Each may be killed again at 10 s; its run is adopted the same way. With
    // no margin, khrun's own stop and the runtime's kill both come at 10 s: under load either may win, and
    // an invocation that stopped itself ('interrupted') leaves the run adoptable just as a killed one does.
    // The loop ends on the khstate, not on an invocation's answer: the invocation that records the run
    // may itself be killed right after its write (at a load average of 12 the runtime's start takes 3-5 s),
    // and the next one would then start a new run of the check, as asked. It ends by a deadline, not a
    // count: how many invocations a loaded machine kills before one gets through is not this test's point.
    const later: FunctionInvocation[] = [];
    const seen: string[] = [];
    let done = left;
    const deadline = Date.now() + 150_000;
    while (Date.now() < deadline) {
      const inv = await runCheck.invoke({ checkName: 'rt-killed', namespace: ns });
      later.push(inv);
      const result = (inv.payload as { result?: string } | undefined)?.result;
      seen.push(inv.timedOut ? 'timed out' : (result ?? inv.body));
      done = await readState(kc, ns, 'rt-killed');
      if (readLastOutcome(done)?.uuid === runUuid) break;
      expect(inv.timedOut || result === 'busy' || result === 'interrupted', inv.body).toBe(true);
      const leaseUntilMs = readActiveRun(done)?.leaseUntilMs ?? 0;
      if (leaseUntilMs > Date.now()) await new Promise((r) => setTimeout(r, leaseUntilMs - Date.now() + 50));
    }
    // The emulator replaced the timed-out runtime: the next invocation started a new one.
    expect(later[0]?.runtimeStarted).toBe(true);
    // The killed invocation's run, adopted by a later one and finished with its checker's report.
    expect(readLastOutcome(done), `the invocations after the first: ${seen.join(', ')}`).toMatchObject({
      kind: 'Succeeded',
      uuid: runUuid,
    });
    const recorder = later.at(-1)!;
    if (!recorder.timedOut)
      expect(recorder.payload).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
  }, 300_000);

  it("report: the URL refuses an unsigned report unless serverless.yml's allowUnsignedReports is true", async () => {
    const refused = await fetch(`${signed.reportUrl}externalCheckStatus`, {
      method: 'POST',
      headers: { 'kh-run-uuid': 'f0000000-0000-4000-8000-000000000000' },
      body: JSON.stringify({ OK: true, Errors: [] }),
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(await refused.text()).toMatch(/signed URL/);
    // No key at all and allowUnsignedReports=true: runCheck gives an unsigned URL, report takes it. As
    // docs/install.md says, the report function then needs list on pods too (it finds the pod by run UUID).
    await kubectl(['create', 'serviceaccount', 'khrun-lambda-report-unsigned', '-n', DEPLOY_NAMESPACE]).catch(
      existing,
    );
    await kubectl([
      'create',
      'clusterrolebinding',
      'khrun-lambda-report-unsigned',
      '--clusterrole=khrun-server',
      `--serviceaccount=${DEPLOY_NAMESPACE}:khrun-lambda-report-unsigned`,
    ]).catch(existing);
    await kubectl(['create', 'role', 'khrun-list-pods', '--verb=list', '--resource=pods', '-n', ns]);
    await kubectl([
      'create',
      'rolebinding',
      'khrun-lambda-report-unsigned',
      '--role=khrun-list-pods',
      `--serviceaccount=${DEPLOY_NAMESPACE}:khrun-lambda-report-unsigned`,
      '-n',
      ns,
    ]);
    const open = await lambdas({
      params: { allowUnsignedReports: 'true' },
      overrides: { report: await identity('khrun-lambda-report-unsigned') },
    });
    await check('rt-unsigned');
    const inv = await open.fn('runCheck').invoke({ checkName: 'rt-unsigned', namespace: ns });
    expect(inv.payload).toMatchObject({ result: 'recorded', kind: 'Succeeded', ok: true });
    const reports = await Promise.all(open.fn('report').invocations);
    expect(reports.some((r) => (r.payload as { statusCode?: number }).statusCode === 200)).toBe(true);
  }, 300_000);

  it('tick (scheduled event) invokes runCheck asynchronously through the Invoke API; runCheck records it', async () => {
    await check('rt-ticked');
    const before = signed.invokeApi.received.length;
    const tick = await signed.fn('tick').invoke({
      version: '0',
      id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '123456789012',
      time: new Date().toISOString(),
      region: 'eu-west-1',
      resources: ['arn:aws:events:eu-west-1:123456789012:rule/khrun-prod-tick'],
      detail: {},
    });
    expect(tick.functionError, tick.body).toBeUndefined();
    expect((tick.payload as { dispatched: string[] }).dispatched).toContain(`${ns}/rt-ticked`);
    const sent = signed.invokeApi.received.slice(before);
    expect(sent.map((s) => [s.functionName, s.invocationType])).toContainEqual([
      deployedName('runCheck'),
      'Event',
    ]);
    expect(sent[0]?.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\//,
    );
    const results = await Promise.all(sent.map((s) => s.result));
    expect(JSON.stringify(results.map((r) => r.payload))).toMatch(/"result":"recorded","kind":"Succeeded"/);
    expect(readLastOutcome(await readState(kc, ns, 'rt-ticked'))).toMatchObject({ kind: 'Succeeded' });
  }, 300_000);

  it('trigger (IAM-authenticated function URL event) answers 202 and hands the run to runCheck', async () => {
    await check('rt-triggered');
    const event = (iam: boolean) =>
      functionUrlEvent({
        method: 'POST',
        url: `/api/run?namespace=${ns}&healthcheck=rt-triggered`,
        headers: {
          authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/eu-west-1/lambda/aws4_request',
        },
        body: Buffer.alloc(0),
        sourceIp: '203.0.113.9',
        nowMs: Date.now(),
        iam: iam
          ? {
              accessKey: 'AKIDEXAMPLE',
              accountId: '123456789012',
              callerId: 'AROAEXAMPLE:gha',
              userArn: 'arn:aws:sts::123456789012:assumed-role/khrun-trigger/gha',
              userId: 'AROAEXAMPLE:gha',
            }
          : undefined,
      });
    const before = signed.invokeApi.received.length;
    const open = await signed.fn('trigger').invoke(event(false));
    expect(open.payload).toMatchObject({ statusCode: 401 });
    expect(signed.invokeApi.received.length).toBe(before);
    const accepted = await signed.fn('trigger').invoke(event(true));
    expect(accepted.payload).toMatchObject({ statusCode: 202 });
    const sent = signed.invokeApi.received.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ functionName: deployedName('runCheck'), invocationType: 'Event' });
    expect((await sent[0]!.result).payload).toMatchObject({
      check: `${ns}/rt-triggered`,
      result: 'recorded',
    });
  }, 300_000);

  it("status serves v2's status JSON and the metrics over its function URL event", async () => {
    const get = (path: string, accept: string) =>
      signed.fn('status').invoke(
        functionUrlEvent({
          method: 'GET',
          url: path,
          headers: { accept },
          body: Buffer.alloc(0),
          sourceIp: '203.0.113.9',
          nowMs: Date.now(),
        }),
      );
    const json = await get('/', 'application/json');
    const body = JSON.parse((json.payload as { body: string }).body) as {
      CheckDetails: Record<string, unknown>;
    };
    expect(Object.keys(body.CheckDetails)).toContain(`${ns}/rt-one`);
    const metrics = await get('/metrics', 'text/plain');
    expect((metrics.payload as { body: string }).body).toContain('kuberhealthy_cluster_state');
  }, 300_000);
});
