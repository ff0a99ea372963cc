import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchCluster } from './bench-cluster.ts';
import { repoRoot } from './bench-cluster.ts';
import { createCommandChecks, sleepThenReport } from './command-check.ts';
import { billedGbSeconds, readConfiguredMemoryMb } from './lambda-billing.ts';
import { spawnToExit } from './spawn-khrun.ts';
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
  /** runCheck handler, call to return, per invocation. */
  runCheckMs: Summary;
  /** The report handler, per report (one per check). */
  reportMs: Summary;
  /** Billed GB-seconds per invocation of runCheck (duration rounded up to 1 ms × memory). */
  runCheckGbSeconds: Summary;
  /** runCheck's share per check (per invocation / batch) plus one report's, from the medians. */
  gbSecondsPerCheck: number;
}

export interface LambdaCostResult {
  how: string;
  memoryMb: { runCheck: number; report: number };
  /** Import of each bundle in the stand-in runtime: a cold start's init phase, billed once per environment. */
  initMs: { runCheck: Summary; report: Summary };
  cases: LambdaCostFigure[];
}

const succeeded = (result: unknown) => (JSON.stringify(result).match(/"kind":"Succeeded"/g) ?? []).length;

/** One case in its own stand-in runtime process (lambda-host.mjs): its checks, its invocations. */
async function measureCase(
  bench: BenchCluster,
  c: LambdaCase,
  ctx: {
    dist: string;
    goChecker: string;
    kubeconfig: string;
    memoryMb: { runCheck: number; report: number };
  },
) {
  const prefix = `l${c.checkSeconds}s-b${c.batch}-`;
  const names = await createCommandChecks(
    bench.cluster.kubeConfig,
    bench.namespace,
    c.batch,
    {
      command: sleepThenReport(ctx.goChecker, c.checkSeconds),
      runInterval: '1h',
      timeout: `${c.checkSeconds + 120}s`,
    },
    prefix,
  );
  const ns = bench.namespace;
  const event =
    c.batch === 1
      ? { kind: 'khcheck', namespace: ns, checkName: names[0] }
      : { checks: names.map((checkName) => ({ kind: 'khcheck', namespace: ns, checkName })) };
  const plan = {
    dist: ctx.dist,
    reportHost: bench.cluster.hostIp,
    events: Array.from({ length: c.invocations }, () => event),
    runCheckTimeoutMs: 900_000,
    runCheckMemoryMb: ctx.memoryMb.runCheck,
    reportTimeoutMs: 20_000,
    reportMemoryMb: ctx.memoryMb.report,
  };
  const run = await spawnToExit([process.execPath, join(import.meta.dirname, 'lambda-host.mjs')], {
    KHRUN_BENCH_LAMBDA_PLAN: JSON.stringify(plan),
    KUBECONFIG: ctx.kubeconfig,
    KHRUN_NAMESPACES: ns,
    KHRUN_REPORT_KEY: 'bench-report-key-0123456789abcdef',
    KHRUN_BUDGET_MARGIN_SECONDS: '30',
    AWS_REGION: 'eu-west-1',
  });
  const line = /^KHRUN_BENCH_LAMBDA (.*)$/m.exec(run.stdout)?.[1];
  if (run.code !== 0 || !line) throw new Error(`lambda-host exited ${run.code}:\n${run.stderr}`);
  const out = JSON.parse(line) as {
    initMs: { runCheck: number; report: number };
    invocations: Array<{ ms: number; result: unknown }>;
    reportMs: number[];
  };
  for (const inv of out.invocations) {
    if (succeeded(inv.result) !== c.batch)
      throw new Error(`runCheck did not record ${c.batch} successes: ${JSON.stringify(inv.result)}`);
  }
  const runCheckMs = out.invocations.map((i) => i.ms);
  const gb = runCheckMs.map((ms) => billedGbSeconds(ms, ctx.memoryMb.runCheck));
  const reportGb = out.reportMs.map((ms) => billedGbSeconds(ms, ctx.memoryMb.report));
  const figure: LambdaCostFigure = {
    checkSeconds: c.checkSeconds,
    batch: c.batch,
    runCheckMs: summarize(runCheckMs),
    reportMs: summarize(out.reportMs),
    runCheckGbSeconds: summarize(gb),
    gbSecondsPerCheck: summarize(gb).median / c.batch + summarize(reportGb).median,
  };
  return { figure, initMs: out.initMs };
}

/**
 * The runCheck Lambda's cost per check run: the bundled handler invoked with local events in a spawned
 * stand-in runtime (lambda-host.mjs), against the local cluster; checkers report to the bundled report
 * handler behind a stand-in function URL. Cases run one after another, except that the long ones (60 s and
 * up) run side by side, since they only wait.
 */
export async function measureLambdaCost(
  bench: BenchCluster,
  cases: LambdaCase[],
  opts: { dist: string; goChecker: string },
): Promise<LambdaCostResult> {
  const user = await bench.userKubeConfig('lambda-runner');
  const kubeconfig = join(bench.cluster.dir, 'bench-lambda-runner.kubeconfig');
  await writeFile(kubeconfig, user.kc.exportConfig(), { mode: 0o600 });
  const file = join(repoRoot, 'serverless.yml');
  const memoryMb = {
    runCheck: await readConfiguredMemoryMb(file, 'runCheck'),
    report: await readConfiguredMemoryMb(file, 'report'),
  };
  const ctx = { dist: opts.dist, goChecker: opts.goChecker, kubeconfig, memoryMb };
  const short = cases.filter((c) => c.checkSeconds < 60);
  const long = cases.filter((c) => c.checkSeconds >= 60);
  const results = [];
  for (const c of short) results.push(await measureCase(bench, c, ctx));
  results.push(...(await Promise.all(long.map((c) => measureCase(bench, c, ctx)))));
  return {
    how: `runCheck and report, the bundles in a spawned stand-in runtime (lambda-host.mjs: import timed as the init phase, then one invocation after another, warm), handler call to return timed in that process; GB-s = memory in serverless.yml / 1024 × duration rounded up to 1 ms, as AWS bills; checkers are sh + the Go checkclient program (sleep, then report success) on the local cluster; ${cases.map((c) => `${c.checkSeconds} s × batch ${c.batch}: n=${c.invocations}`).join(', ')}`,
    memoryMb,
    initMs: {
      runCheck: summarize(results.map((r) => r.initMs.runCheck)),
      report: summarize(results.map((r) => r.initMs.report)),
    },
    cases: results.map((r) => r.figure),
  };
}
