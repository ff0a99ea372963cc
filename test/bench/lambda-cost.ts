import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { functionUrlEvent } from '@khrun/devkit/lambda/function-url.ts';
import type { FunctionInvocation } from '@khrun/devkit/lambda/lambda-function.ts';
import { CoreV1Api } from '@kubernetes/client-node';
import {
  buildLambdaPackage,
  type KhrunFunction,
  type KhrunLambdas,
  lambdaRuntimeParts,
  startKhrunLambdas,
} from '../integration/helpers/lambda-runtime.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { repoRoot } from './bench-cluster.ts';
import { createCommandChecks, sleepThenReport } from './command-check.ts';
import { billedGbSeconds } from './lambda-billing.ts';
import { type Summary, summarize } from './stats.ts';

/** One case: invocations of runCheck, each with `batch` checks whose checker reports after checkSeconds. */
export interface LambdaCase {
  checkSeconds: number;
  batch: number;
  invocations: number;
}

export interface LambdaCostFigure {
  checkSeconds: number;
  /** Checks per runCheck invocation (1: the event names one check; more: `{"checks": [...]}`). */
  batch: number;
  /** runCheck's Duration per invocation, as the emulator's REPORT line gives it (init excluded). */
  runCheckMs: Summary;
  /** The report function's Duration, per report (one per check). */
  reportMs: Summary;
  /** Billed GB-seconds per invocation of runCheck (Duration rounded up to 1 ms × memory). */
  runCheckGbSeconds: Summary;
  /** runCheck's share per check (per invocation / batch) plus one report's, from the medians. */
  gbSecondsPerCheck: number;
}

/** One function's cold start: the first invocation of a new execution environment against a warm one. */
export interface ColdStartFigure {
  /** The first invocation, request to response: the runtime started, the bundle imported, the handler. */
  firstMs: Summary;
  /** The next invocation of the same environment, request to response. */
  warmMs: Summary;
  /** The emulator's Duration of each (it starts the runtime inside the first invocation's). */
  firstDurationMs: Summary;
  warmDurationMs: Summary;
}

export interface LambdaCostResult {
  how: string;
  memoryMb: { runCheck: number; report: number };
  /** Peak RSS of the runtime processes (Node and aws-lambda-ric), MiB: what Lambda reports as Max Memory Used. */
  maxMemoryUsedMiB: { runCheck: Summary; report: Summary };
  coldStart: { how: string } & Partial<Record<KhrunFunction, ColdStartFigure>>;
  cases: LambdaCostFigure[];
}

interface Ctx {
  bench: BenchCluster;
  goChecker: string;
  start: (namespace: string, tag: string) => Promise<KhrunLambdas>;
}

const succeeded = (result: unknown) => (JSON.stringify(result).match(/"kind":"Succeeded"/g) ?? []).length;

async function memoryOf(l: KhrunLambdas, fn: KhrunFunction): Promise<number[]> {
  const all = await Promise.all(l.fn(fn).environments.map((e) => e.maxMemoryUsedMiB()));
  return all.filter((m): m is number => m !== undefined);
}

/** One case with its own functions (new execution environments): its checks, its invocations. */
async function measureCase(ctx: Ctx, c: LambdaCase) {
  const prefix = `l${c.checkSeconds}s-b${c.batch}-`;
  const ns = ctx.bench.namespace;
  const names = await createCommandChecks(
    ctx.bench.cluster.kubeConfig,
    ns,
    c.batch,
    {
      command: sleepThenReport(ctx.goChecker, c.checkSeconds),
      runInterval: '1h',
      timeout: `${c.checkSeconds + 120}s`,
    },
    prefix,
  );
  const event =
    c.batch === 1
      ? { kind: 'khcheck', namespace: ns, checkName: names[0] }
      : { checks: names.map((checkName) => ({ kind: 'khcheck', namespace: ns, checkName })) };
  const lambdas = await ctx.start(ns, prefix);
  try {
    const runCheck = lambdas.fn('runCheck');
    // The runtime started first (a cold start, measured apart): every measured invocation is warm.
    const warmUp = await runCheck.invoke({ kind: 'khcheck', namespace: ns, checkName: `${prefix}warm-up` });
    if (!warmUp.runtimeStarted || (warmUp.payload as { result?: string })?.result !== 'not-found')
      throw new Error(
        `${prefix}: the warm-up invocation did not start the runtime: ${warmUp.body.slice(0, 300)}`,
      );
    // And as many report environments as the batch's reports can take at once (the reserved concurrency).
    const report = lambdas.fn('report');
    const reportWarmUp = functionUrlEvent({
      method: 'GET',
      url: '/externalCheckStatus',
      headers: {},
      body: Buffer.alloc(0),
      sourceIp: '203.0.113.9',
      nowMs: Date.now(),
    });
    const reportEnvironments = Math.min(c.batch, lambdas.configs.get('report')?.reservedConcurrency ?? 1);
    await Promise.all(Array.from({ length: reportEnvironments }, () => report.invoke(reportWarmUp)));
    const warmUps = report.invocations.length;
    const invocations: FunctionInvocation[] = [];
    for (let i = 0; i < c.invocations; i++) {
      const inv = await runCheck.invoke(event);
      if (succeeded(inv.payload) !== c.batch)
        throw new Error(`runCheck did not record ${c.batch} successes: ${inv.body.slice(0, 500)}`);
      invocations.push(inv);
    }
    const reports = (await Promise.all(report.invocations.slice(warmUps))).filter(
      (r) => (r.payload as { statusCode?: number } | undefined)?.statusCode === 200,
    );
    const durations = (xs: FunctionInvocation[]) =>
      xs.map((x) => {
        if (!x.report) throw new Error(`no REPORT line for ${x.requestId}`);
        return x.report.durationMs;
      });
    // An invocation that started a runtime carries its start (the cold-start table has that): left out.
    const runCheckMs = durations(invocations.filter((i) => !i.runtimeStarted));
    const reportMs = durations(reports.filter((r) => !r.runtimeStarted));
    if (!runCheckMs.length || !reportMs.length) throw new Error(`${prefix}: no warm invocation to measure`);
    const memoryMb = { runCheck: runCheck.config.memoryMb, report: report.config.memoryMb };
    const gb = runCheckMs.map((ms) => billedGbSeconds(ms, memoryMb.runCheck));
    const reportGb = reportMs.map((ms) => billedGbSeconds(ms, memoryMb.report));
    const figure: LambdaCostFigure = {
      checkSeconds: c.checkSeconds,
      batch: c.batch,
      runCheckMs: summarize(runCheckMs),
      reportMs: summarize(reportMs),
      runCheckGbSeconds: summarize(gb),
      gbSecondsPerCheck: summarize(gb).median / c.batch + summarize(reportGb).median,
    };
    return {
      figure,
      memoryMb,
      memory: { runCheck: await memoryOf(lambdas, 'runCheck'), report: await memoryOf(lambdas, 'report') },
    };
  } finally {
    await lambdas.stop();
  }
}

/** A cheap invocation of each function that touches no check (an empty namespace): what a cold start adds. */
function coldEvents(ns: string): Record<KhrunFunction, unknown> {
  const url = (method: string, path: string) =>
    functionUrlEvent({
      method,
      url: path,
      headers: {},
      body: Buffer.alloc(0),
      sourceIp: '203.0.113.9',
      nowMs: Date.now(),
    });
  return {
    runCheck: { checkName: 'absent', namespace: ns },
    report: url('GET', '/externalCheckStatus'),
    status: url('GET', '/'),
    tick: { 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} },
    // Without an IAM identity: refused (401) before any request; init and the handler are the cost.
    trigger: url('POST', `/api/run?namespace=${ns}&healthcheck=absent`),
  };
}

async function measureColdStarts(ctx: Ctx, rounds: number) {
  const ns = 'bench-lambda-cold';
  await ctx.bench.cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: ns } } })
    .catch(() => {});
  const lambdas = await ctx.start(ns, 'cold-');
  const events = coldEvents(ns);
  const figures: Partial<Record<KhrunFunction, ColdStartFigure>> = {};
  try {
    for (const fn of Object.keys(events) as KhrunFunction[]) {
      const first: number[] = [];
      const warm: number[] = [];
      const firstDuration: number[] = [];
      const warmDuration: number[] = [];
      for (let i = 0; i < rounds; i++) {
        await lambdas.fn(fn).recycle();
        const a = await lambdas.fn(fn).invoke(events[fn]);
        const b = await lambdas.fn(fn).invoke(events[fn]);
        for (const inv of [a, b])
          if (inv.functionError || inv.timedOut) throw new Error(`${fn} failed: ${inv.body.slice(0, 300)}`);
        if (!a.runtimeStarted || b.runtimeStarted || !a.report || !b.report)
          throw new Error(`${fn}: the first invocation was not a cold start, or the second not warm`);
        first.push(a.clientMs);
        warm.push(b.clientMs);
        firstDuration.push(a.report.durationMs);
        warmDuration.push(b.report.durationMs);
      }
      figures[fn] = {
        firstMs: summarize(first),
        warmMs: summarize(warm),
        firstDurationMs: summarize(firstDuration),
        warmDurationMs: summarize(warmDuration),
      };
    }
  } finally {
    await lambdas.stop();
  }
  return figures;
}

/**
 * The Lambda functions' cost per check run and their cold starts, measured through AWS's Runtime Interface
 * Emulator with aws-lambda-ric on Node 22 (test/integration/helpers/lambda-runtime.ts), configured from
 * serverless.yml, against the local cluster; checkers report to the report function behind its function
 * URL. Cases run one after another, except that the long ones (60 s and up) run side by side, since they
 * only wait.
 */
export async function measureLambdaCost(
  bench: BenchCluster,
  cases: LambdaCase[],
  opts: { goChecker: string; coldStartRounds: number },
): Promise<LambdaCostResult> {
  const user = await bench.userKubeConfig('lambda-runner');
  const kubeconfig = join(bench.cluster.dir, 'bench-lambda-runner.kubeconfig');
  await writeFile(kubeconfig, user.kc.exportConfig(), { mode: 0o600 });
  const parts = await lambdaRuntimeParts((line) => console.log(`[lambda runtime] ${line}`));
  const taskRoot = await buildLambdaPackage(join(repoRoot, '.khrun/bench-lambda-package'));
  const ctx: Ctx = {
    bench,
    goChecker: opts.goChecker,
    start: (namespace, tag) =>
      startKhrunLambdas({
        parts,
        taskRoot,
        logDir: join(bench.cluster.dir, 'lambda-logs', tag.replace(/-$/, '')),
        reportHost: bench.cluster.hostIp,
        params: { namespaces: namespace, reportKeyParameter: '' },
        environment: {
          KUBECONFIG: kubeconfig,
          KHRUN_REPORT_KEY: 'bench-report-key-0123456789abcdef',
          AWS_REGION: 'eu-west-1',
          AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
          AWS_SECRET_ACCESS_KEY: 'bench-secret',
          AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
          AWS_EC2_METADATA_DISABLED: 'true',
        },
      }),
  };
  const coldStart = await measureColdStarts(ctx, opts.coldStartRounds);
  const short = cases.filter((c) => c.checkSeconds < 60);
  const long = cases.filter((c) => c.checkSeconds >= 60);
  const results = [];
  for (const c of short) results.push(await measureCase(ctx, c));
  results.push(...(await Promise.all(long.map((c) => measureCase(ctx, c)))));
  const memoryMb = results[0]?.memoryMb ?? { runCheck: 0, report: 0 };
  return {
    how: `runCheck and report, each function in AWS's Runtime Interface Emulator (built from the Go module proxy) running aws-lambda-ric on Node 22 with serverless.yml's handler, environment, timeout and memory, new execution environments per case, runCheck's runtime started by a warm-up invocation (a missing check) and report's by GETs (as many at once as a batch's reports, up to its reserved concurrency), then invocations one after another; durations are the emulator's REPORT Duration of warm invocations (an invocation that started a runtime is left out here: cold starts below); GB-s = memory in serverless.yml / 1024 × duration rounded up to 1 ms, as AWS bills; checkers are sh + the Go checkclient program (sleep, then report success) on the local cluster, reporting through the report function's URL; ${cases.map((c) => `${c.checkSeconds} s × batch ${c.batch}: n=${c.invocations}`).join(', ')}`,
    memoryMb,
    maxMemoryUsedMiB: {
      runCheck: summarize(results.flatMap((r) => r.memory.runCheck)),
      report: summarize(results.flatMap((r) => r.memory.report)),
    },
    coldStart: {
      how: `each function's execution environment stopped, then invoked twice: the first invocation starts the runtime (Node 22, aws-lambda-ric, the bundle imported) and the second is warm; request to response at the emulator's invoke API on 127.0.0.1, and the emulator's REPORT Duration; n=${opts.coldStartRounds} per function; events that touch no check (runCheck: a missing khcheck; report: GET; status: GET /; tick: an empty namespace; trigger: unsigned, refused)`,
      ...coldStart,
    },
    cases: results.map((r) => r.figure),
  };
}
