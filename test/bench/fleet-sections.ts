import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { measureAdmissionCost } from './admission-cost.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { goCheckerBinary } from './go-checker.ts';
import { type LambdaCase, measureLambdaCost } from './lambda-cost.ts';
import { type LongCheckFigure, startLongCheck } from './long-check.ts';
import {
  CHECKS_PER_NAMESPACE,
  type ExitedProcess,
  measureScale,
  type ScaleFigure,
  scaleFleet,
} from './scale.ts';
import { declareNodeRoom, deployForScale } from './scale-setup.ts';
import { fmtMs } from './stats.ts';
import { measureSteadyState, removeAll } from './steady-state.ts';
import { measureTickDispatch, type TickDispatchFigure } from './tick-dispatch.ts';

// The sections about many checks and about money: scale, steady state, a long check's API requests, and
// Lambda cost. Sizes per mode here; quick mode (CI) keeps each to seconds.

export interface FleetContext {
  bench: BenchCluster;
  quick: boolean;
  dist: string;
  cacheDir: string;
  processes: () => ExitedProcess[];
  log: (line: string) => void;
}

/** A Node runner's peak RSS (MiB, measured before batching): sizes whose runners would not fit are left out. */
const NODE_RUNNER_MIB = 93;
/** What the benchmark lets concurrent runner processes take of this machine's memory. */
const RUNNER_MEMORY_BUDGET_MIB = 12 * 1024;
/**
 * Full mode's time for the scale section: a size predicted (from the last size's rate) to overrun it is left
 * out. KHRUN_BENCH_SCALE_MINUTES sets it (default 12; more measures more sizes on a faster machine).
 */
const SCALE_BUDGET_MS = (Number(process.env.KHRUN_BENCH_SCALE_MINUTES) || 12) * 60_000;

/** Checks recorded a second in a row: all of them over the time to the last, or those recorded. */
function recordRate(f: ScaleFigure): number | undefined {
  const ms = f.allRecordedMs ?? f.lastRecordedMs;
  return ms && f.recorded ? f.recorded / (ms / 1000) : undefined;
}

/** infra/deploy applied once (through the overlay), and the tick's kubeconfig. */
export async function deployed(ctx: FleetContext): Promise<{ tickKubeconfig: string; tickUser: string }> {
  await deployForScale(ctx.bench.cluster.kubeconfigPath, ctx.cacheDir, ctx.dist);
  const tickSa = await ctx.bench.serviceAccountKubeConfig(DEPLOY_NAMESPACE, 'khrun-tick');
  const tickKubeconfig = join(ctx.bench.cluster.dir, 'bench-tick.kubeconfig');
  await writeFile(tickKubeconfig, tickSa.kc.exportConfig(), { mode: 0o600 });
  return { tickKubeconfig, tickUser: tickSa.username };
}

const FULL_SCALE_PLAN = [
  { n: 100, batchSize: 25 },
  { n: 500, batchSize: 25 },
  // One Job per check, for comparison: 100 Node runners at once.
  { n: 100, batchSize: 1 },
  { n: 1000, batchSize: 25 },
  { n: 2000, batchSize: 25 },
];

/**
 * KHRUN_BENCH_SCALE_ROWS (e.g. "2000x25,1000x25"): measure only these rows, and keep the last results' other
 * rows (a size that did not fit one session's time is measured in another).
 */
function scaleRows(text: string | undefined): Array<{ n: number; batchSize: number }> | undefined {
  if (!text) return undefined;
  return text.split(',').map((row) => {
    const m = /^\s*(\d+)x(\d+)\s*$/.exec(row);
    if (!m) throw new Error(`KHRUN_BENCH_SCALE_ROWS: "${row}" is not CHECKSxBATCH (e.g. 2000x25)`);
    return { n: Number(m[1]), batchSize: Number(m[2]) };
  });
}

type ScaleResult = { how: string; notes: string[]; figures: ScaleFigure[] };

export async function scaleSection(ctx: FleetContext, previous?: ScaleResult): Promise<ScaleResult> {
  const only = ctx.quick ? undefined : scaleRows(process.env.KHRUN_BENCH_SCALE_ROWS);
  const measured = await measureScaleRows(
    ctx,
    only ?? (ctx.quick ? [{ n: 20, batchSize: 25 }] : FULL_SCALE_PLAN),
  );
  if (!only || !previous?.figures) return measured;
  const redone = (n: number, k: number) => only.some((r) => r.n === n && r.batchSize === k);
  const order = (f: ScaleFigure) =>
    FULL_SCALE_PLAN.findIndex((r) => r.n === f.checks && r.batchSize === f.batchSize);
  return {
    how: measured.how,
    notes: [
      ...previous.notes.filter(
        (note) => !only.some((r) => note.startsWith(`${r.n} checks at batch size ${r.batchSize} `)),
      ),
      ...measured.notes,
    ],
    figures: [...previous.figures.filter((f) => !redone(f.checks, f.batchSize)), ...measured.figures].sort(
      (a, b) => order(a) - order(b),
    ),
  };
}

async function measureScaleRows(
  ctx: FleetContext,
  plan: Array<{ n: number; batchSize: number }>,
): Promise<ScaleResult> {
  const goChecker = await goCheckerBinary(ctx.cacheDir);
  const { tickKubeconfig, tickUser } = await deployed(ctx);
  const room = await declareNodeRoom(ctx.bench.cluster.kubeConfig, Math.max(...plan.map((p) => p.n)) + 500);
  const figures: ScaleFigure[] = [];
  const notes: string[] = [];
  const t0 = Date.now();
  for (const { n, batchSize } of plan) {
    // The rate of the last row of this batch size (one Job per check records far slower than batches).
    const prev = figures.findLast((f) => f.batchSize === batchSize) ?? figures.at(-1);
    const rate = prev && recordRate(prev);
    if (prev && rate && !ctx.quick) {
      const predictedMs = (n / rate) * 1000 + 60_000;
      if (Date.now() - t0 + predictedMs > SCALE_BUDGET_MS) {
        notes.push(
          `${n} checks at batch size ${batchSize} left out: at the rate of the ${prev.checks}-check row at batch size ${prev.batchSize} (${rate.toFixed(1)} checks recorded a second) it would take about ${Math.round(predictedMs / 60_000)} min, past the section's ${SCALE_BUDGET_MS / 60_000} min.`,
        );
        continue;
      }
    }
    // What the last size showed: runner Jobs per check. A tick that does not batch makes one per check.
    const last = figures.findLast((f) => f.batchSize === batchSize);
    const jobsPerCheck = last ? last.runnerJobs / last.checks : 1 / batchSize;
    if (n * jobsPerCheck * NODE_RUNNER_MIB > RUNNER_MEMORY_BUDGET_MIB) {
      notes.push(
        `${n} checks at batch size ${batchSize} left out: the tick made ${last?.runnerJobs} runner Jobs for ${last?.checks} checks, and ${Math.round(n * jobsPerCheck)} runner processes of about ${NODE_RUNNER_MIB} MiB would not fit this machine.`,
      );
      continue;
    }
    ctx.log(`  ${n} due checks, batch size ${batchSize}`);
    const f = await measureScale(ctx.bench, {
      n,
      batchSize,
      dist: ctx.dist,
      checkerCommand: [goChecker],
      tickKubeconfig,
      tickUser,
      runnerUser: `system:serviceaccount:${DEPLOY_NAMESPACE}:khrun-runner`,
      processes: ctx.processes,
      log: ctx.log,
    });
    figures.push(f);
    ctx.log(
      `    tick ${fmtMs(f.tickMs)}, ${f.recorded}/${n} recorded, all after ${fmtMs(f.allRecordedMs)}, ${f.runnerJobs} runner Jobs${Object.keys(f.runnerFailures).length ? `, runner failures ${JSON.stringify(f.runnerFailures)}` : ''}`,
    );
  }
  // The next sections get a cluster without these thousands of checks, pods and Jobs.
  for (const { n, batchSize } of plan)
    for (const { namespace } of scaleFleet(n, batchSize)) await removeAll(ctx.bench, namespace);
  return {
    how: `one khrun tick (the bundle, spawned, as the khrun-tick ServiceAccount of infra/deploy applied through an overlay that only makes the image a local command; KHRUN_BATCH_SIZE as given) over N due khchecks, ${CHECKS_PER_NAMESPACE} to a namespace (the admission table above shows why), through the real tick → Job path: the Job controller and scheduler place the runner pods, the process kubelet runs every runner and checker as a process on the same machine. The checker is a program built on Kuberhealthy v2.7.1's Go checkclient that reports success at once (a few MiB where a Node checker takes about 40). The one node declares room for ${room.pods} pods and ${room.cpu} CPUs (a cluster that runs this many checks has many nodes; the local node's real-kubelet default is 110 pods, and the runner's 50m CPU request fits 40 times on 2 CPUs). Peak RSS from each process's own maxRSS at exit; requests of the tick's and the runner's ServiceAccounts from the audit log, tick spawn to the last runner Job's end; n=1 per row`,
    notes,
    figures,
  };
}

/** What infra/deploy's admission policies cost one checker pod create, by khchecks in its namespace. */
export async function admissionSection(ctx: FleetContext) {
  await deployed(ctx);
  return measureAdmissionCost(ctx.bench, {
    sizes: ctx.quick ? [1, 50] : [1, 25, 100, 500, 1000, 2000],
    n: ctx.quick ? 5 : 100,
    command: [await goCheckerBinary(ctx.cacheDir)],
    log: ctx.log,
  });
}

/** The tick alone (tick-dispatch.ts): spawn to exit over N due checks, a fresh namespace per sample. */
export async function tickSection(ctx: FleetContext): Promise<TickDispatchFigure[]> {
  const sizes = ctx.quick ? [50] : [1000, 2000];
  const { tickKubeconfig, tickUser } = await deployed(ctx);
  await declareNodeRoom(ctx.bench.cluster.kubeConfig, Math.max(...sizes) + 500);
  const figures: TickDispatchFigure[] = [];
  for (const n of sizes)
    figures.push(
      await measureTickDispatch(ctx.bench, {
        n,
        batchSize: 25,
        repeat: ctx.quick ? 1 : 3,
        dist: ctx.dist,
        tickKubeconfig,
        tickUser,
        log: ctx.log,
      }),
    );
  return figures;
}

/**
 * 1,000 checks, on the shortest whole-minute interval (at least 2 min) in which this machine records them
 * all within 70% of it, at the rate the scale section's largest batched row showed: its one process kubelet
 * starts far fewer pods a second than a cluster of many nodes, and a steady state the machine cannot keep
 * is not one. The tick runs every minute until one interval plus the runner Jobs' retention has passed
 * (the first runs' Jobs could be gone), then five more times: those samples are the steady state.
 */
export async function steadyStateSection(ctx: FleetContext, scale?: { figures: ScaleFigure[] }) {
  const goChecker = await goCheckerBinary(ctx.cacheDir);
  const { tickKubeconfig } = await deployed(ctx);
  await declareNodeRoom(ctx.bench.cluster.kubeConfig, 2500);
  const n = ctx.quick ? 20 : 1000;
  const largest = scale?.figures?.filter((f) => f.batchSize > 1 && recordRate(f)).at(-1);
  const ratePerSecond = largest && recordRate(largest);
  const needSeconds = ratePerSecond ? n / ratePerSecond / 0.7 : 0;
  const runIntervalSeconds = Math.max(120, Math.ceil(needSeconds / 60) * 60);
  // lib/schedule/job-retention.ts: one interval, clamped to 2–10 minutes.
  const retentionSeconds = Math.min(600, Math.max(120, runIntervalSeconds));
  const tickPeriodSeconds = 60;
  const ticks = Math.ceil((runIntervalSeconds + retentionSeconds) / tickPeriodSeconds) + 5;
  ctx.log(
    `  ${n} checks every ${runIntervalSeconds} s${ratePerSecond ? ` (this machine recorded ${ratePerSecond.toFixed(1)} checks a second)` : ''}, ${ticks} ticks`,
  );
  const figure = await measureSteadyState(ctx.bench, {
    n,
    runIntervalSeconds,
    tickPeriodSeconds,
    ticks,
    dist: ctx.dist,
    checkerCommand: [goChecker],
    tickKubeconfig,
    processes: ctx.processes,
    log: ctx.log,
  });
  return {
    ...figure,
    ...(runIntervalSeconds > 120 && ratePerSecond
      ? {
          sized: `every ${runIntervalSeconds / 60} min, not 2: the scale section's ${largest?.checks}-check row recorded ${ratePerSecond.toFixed(1)} checks a second on this machine (one process kubelet runs every pod), and ${n} checks need ${Math.round(n / ratePerSecond)} s of that; the interval is the shortest whole minute that leaves 30% spare`,
        }
      : {}),
  };
}

/** Started at the beginning and collected later: the run only waits, so other sections run meanwhile. */
export async function startLongCheckSection(ctx: FleetContext): Promise<() => Promise<LongCheckFigure>> {
  return startLongCheck(ctx.bench, {
    checkSeconds: ctx.quick ? 20 : 600,
    dist: ctx.dist,
    goChecker: await goCheckerBinary(ctx.cacheDir),
  });
}

export async function lambdaSection(ctx: FleetContext) {
  const cases: LambdaCase[] = ctx.quick
    ? [
        { checkSeconds: 1, batch: 1, invocations: 3 },
        { checkSeconds: 1, batch: 5, invocations: 1 },
      ]
    : [
        { checkSeconds: 1, batch: 1, invocations: 20 },
        { checkSeconds: 1, batch: 25, invocations: 5 },
        { checkSeconds: 60, batch: 1, invocations: 3 },
        { checkSeconds: 60, batch: 25, invocations: 2 },
      ];
  return measureLambdaCost(ctx.bench, cases, {
    goChecker: await goCheckerBinary(ctx.cacheDir),
    coldStartRounds: ctx.quick ? 2 : 5,
  });
}
