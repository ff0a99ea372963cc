import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, homedir, totalmem, type } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot, startBenchCluster } from './bench-cluster.ts';
import { buildForBench } from './build-for-bench.ts';
import { type CliStartFigure, measureBundles, measureCliStart } from './cold-start.ts';
import { kuberhealthyLines } from './kh-table.ts';
import {
  type KuberhealthyFigures,
  kuberhealthyImages,
  measureKuberhealthy,
} from './kuberhealthy-baseline.ts';
import { createBenchCheck, type IterationSample, measureIteration } from './overhead.ts';
import { deployForScale, measureScale, type ScaleFigure } from './scale.ts';
import { measureServeMemory, type ServeMemoryFigure } from './serve-memory.ts';
import { fmtMs, type Summary, summarize } from './stats.ts';

// npm run bench [-- --quick] [-- --only SECTION,...]: khrun's cost per iteration, in time and API requests,
// against the local cluster, beside a v2-style polling baseline. Prints a table and writes bench/results.json.
// It builds what it measures first (into .khrun/bench-dist, never a dist/ left by an earlier build) and
// records the build's identity. --only measures the named sections and replaces just those in the results
// file, noting when and from which build (meta.updates). Never fails on a figure: it fails only when
// something it measures did not work.

const SECTIONS = ['overhead', 'kuberhealthy', 'cli-start', 'scale', 'serve-memory'] as const;
const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
});
const quick = values.quick ?? false;
const only = values.only?.split(',').map((s) => s.trim());
for (const name of only ?? []) {
  if (!(SECTIONS as readonly string[]).includes(name))
    throw new Error(`--only ${name}: no such section; the sections are ${SECTIONS.join(', ')}`);
}
const measures = (section: (typeof SECTIONS)[number]) => !only || only.includes(section);
const iterations = quick ? 5 : 30;
const log = (line: string) => process.stderr.write(`${line}\n`);

log('building the bundles it measures');
const dist = join(repoRoot, '.khrun/bench-dist');
const build = await buildForBench(repoRoot, dist);
log(`  ${build.commit.slice(0, 12)}${build.dirty ? ` + ${build.dirtyPaths.length} changed files` : ''}`);

const containerTimes = new Map<string, { startedAtMs: number; finishedAtMs: number }>();
const processes: Array<{
  pod: string;
  container: string;
  uid: string;
  startedAtMs: number;
  finishedAtMs: number;
}> = [];
const bench = await startBenchCluster(
  log,
  (line, fields) => {
    if (line === 'container exited' && typeof fields?.uid === 'string') {
      const startedAtMs = Number(fields.startedAtMs);
      const finishedAtMs = Number(fields.finishedAtMs);
      if (Number.isFinite(startedAtMs) && Number.isFinite(finishedAtMs)) {
        containerTimes.set(fields.uid, { startedAtMs, finishedAtMs });
        processes.push({
          pod: String(fields.pod),
          container: String(fields.container),
          uid: fields.uid,
          startedAtMs,
          finishedAtMs,
        });
      }
    }
  },
  measures('kuberhealthy') ? await kuberhealthyImages(log) : [],
);
const resultsFile = join(repoRoot, 'bench', quick ? 'results-quick.json' : 'results.json');
// --only replaces sections of the last results; a full run starts afresh.
const results: Record<string, unknown> = only
  ? (JSON.parse(await readFile(resultsFile, 'utf8').catch(() => '{}')) as Record<string, unknown>)
  : {};
try {
  const runner = await bench.userKubeConfig('khrun-runner');
  const cli = await bench.userKubeConfig('khrun-cli');
  await createBenchCheck(bench, 'fast');
  await createBenchCheck(bench, 'cold');

  if (measures('overhead')) {
    log(`overhead: ${iterations} iterations`);
    const samples: IterationSample[] = [];
    for (let i = 0; i < iterations; i++)
      samples.push(await measureIteration(bench, runner, 'fast', (uid) => containerTimes.get(uid)));
    const pick = (k: keyof Omit<IterationSample, 'requests'>) => summarize(samples.map((s) => s[k]));
    const overhead = {
      totalMs: pick('totalMs'),
      checkerMs: pick('checkerMs'),
      overheadMs: pick('overheadMs'),
      claimMs: pick('claimMs'),
      podCreateMs: pick('podCreateMs'),
      podStartMs: pick('podStartMs'),
      reportToNoticedMs: pick('reportToNoticedMs'),
      exitToNoticedMs: pick('exitToNoticedMs'),
      recordMs: pick('recordMs'),
      khrunOwnMs: summarize(samples.map((s) => s.overheadMs - s.podStartMs)),
      requests: summarize(samples.map((s) => s.requests.total)),
      requestsByVerb: samples[samples.length - 1]?.requests.byVerbResource,
    };
    results.overhead = overhead;
  }

  if (measures('cli-start')) {
    log('cold start: bundle imports; khrun run started each way, spawn to first request and to exit');
    results.bundles = await measureBundles(quick ? 2 : 5, dist);
    results.cliStart = await measureCliStart(bench, cli, 'cold', { reps: quick ? 2 : 20, dist, log });
    delete results.timeToFirstRequest;
  }

  // After cli-start (v2 runs every khcheck: the bench's own are set aside meanwhile), before scale's.
  if (measures('kuberhealthy')) {
    log('kuberhealthy: the real v2.7.1 daemon and v3.0.0 controller beside khrun, on the same checks');
    results.kuberhealthy = await measureKuberhealthy(bench, { quick, dist, log });
    delete results.pollingBaseline;
  }

  if (measures('scale')) {
    const sizes = quick ? [10] : [50, 200, 500];
    log(`scale: one tick over ${sizes.join(', ')} due checks`);
    const cacheDir =
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
    const adminKubeconfig = bench.cluster.kubeconfigPath;
    await deployForScale(bench, adminKubeconfig, cacheDir, dist);
    const tickSa = await bench.serviceAccountKubeConfig('kuberhealthy', 'khrun-tick');
    const tickKubeconfig = join(bench.cluster.dir, 'bench-tick.kubeconfig');
    await writeFile(tickKubeconfig, tickSa.kc.exportConfig(), { mode: 0o600 });
    const scale: ScaleFigure[] = [];
    for (const n of sizes) {
      scale.push(
        await measureScale(
          bench,
          n,
          dist,
          {
            tickKubeconfig,
            tickUser: tickSa.username,
            runnerUser: 'system:serviceaccount:kuberhealthy:khrun-runner',
          },
          () => processes,
        ),
      );
      log(
        `  ${n} checks: tick ${fmtMs(scale[scale.length - 1]?.tickMs ?? 0)}, all finished ${fmtMs(scale[scale.length - 1]?.allFinishedMs ?? 0)}`,
      );
    }
    results.scale = scale;
  }

  // Last: it restarts the API server, which the figures above must not see.
  if (measures('serve-memory')) {
    log('serve memory: runs, rejected reports and API server restarts against one khrun serve');
    results.serveMemory = await measureServeMemory(bench, { quick, log, dist });
  }

  const environment = {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    build,
    machine: {
      os: type(),
      cpu: cpus()[0]?.model,
      cores: cpus().length,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
    },
    versions: {
      node: process.version,
      kubernetes: bench.cluster.kubernetesVersion,
      etcd: bench.cluster.etcdVersion,
    },
  };
  if (only) {
    // A partial run: the other sections stay as measured before; meta says what was measured when.
    const meta = (results.meta ?? {}) as { updates?: Array<{ sections: string[] }> };
    const updates = (meta.updates ?? []).filter((u) => !u.sections.every((x) => only.includes(x)));
    results.meta = { ...meta, updates: [...updates, { sections: only, ...environment }] };
  } else results.meta = environment;
  printTable(results);
  process.stdout.write(
    `${kuberhealthyLines(results.kuberhealthy as KuberhealthyFigures | undefined).join('\n')}\n`,
  );
  await mkdir(dirname(resultsFile), { recursive: true });
  await writeFile(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  log(`wrote ${resultsFile.slice(repoRoot.length + 1)}`);
} finally {
  await bench.cluster.stop();
}

function row(name: string, s: Summary | undefined, unit: 'ms' | 'n' = 'ms'): string {
  if (!s) return `${name.padEnd(44)} -`;
  const f = unit === 'ms' ? fmtMs : (n: number) => n.toFixed(1);
  return `${name.padEnd(44)} ${f(s.median).padStart(9)} ${f(s.p95).padStart(9)} ${f(s.min).padStart(9)} ${f(s.max).padStart(9)}  n=${s.n}`;
}

function printTable(r: Record<string, unknown>) {
  const o = (r.overhead ?? {}) as Record<string, Summary | undefined>;
  const lines = [
    `${'figure'.padEnd(44)} ${'median'.padStart(9)} ${'p95'.padStart(9)} ${'min'.padStart(9)} ${'max'.padStart(9)}`,
    row('iteration, invocation to recorded outcome', o.totalMs),
    row('  checker pod, container start to exit', o.checkerMs),
    row('  overhead (total - checker)', o.overheadMs),
    row("  overhead less the local kubelet's pod start", o.khrunOwnMs),
    row('  claim (read khcheck, CAS khstate)', o.claimMs),
    row('  clear earlier pods + create pod', o.podCreateMs),
    row('  pod created to Running (local kubelet)', o.podStartMs),
    row('  report POST to noticed by the runner', o.reportToNoticedMs),
    row('  container exit to noticed', o.exitToNoticedMs),
    row('  record outcome', o.recordMs),
    row('API requests per iteration (khrun)', o.requests, 'n'),
  ];
  for (const b of (r.bundles as Array<{ file: string; bytes: number; importMs: Summary }>) ?? []) {
    lines.push(row(`bundle ${b.file} (${(b.bytes / 1024).toFixed(0)} KiB) import`, b.importMs));
  }
  const c = r.cliStart as { entries: CliStartFigure[] } | undefined;
  for (const e of c?.entries ?? []) {
    lines.push(`khrun run started as: ${e.name}`);
    lines.push(row('  spawn to first API request', e.firstRequestMs));
    lines.push(row('  spawn to exit (a check that reports at once)', e.exitMs));
  }
  lines.push('');
  lines.push(
    'scale: one khrun tick, dispatching a Job per due check (runner pods and checker pods are local processes)',
  );
  lines.push(
    'checks  tick      all done   tick RSS  runner RSS (med)  runner proc (med)  checker proc (med)  API req/check  outcomes',
  );
  for (const s of (r.scale as ScaleFigure[]) ?? []) {
    lines.push(
      `${String(s.checks).padEnd(7)} ${fmtMs(s.tickMs).padEnd(9)} ${fmtMs(s.allFinishedMs).padEnd(10)} ${`${s.tickPeakRssMiB.toFixed(0)} MiB`.padEnd(9)} ${`${s.runnerPeakRssMiB.median.toFixed(0)} MiB`.padEnd(17)} ${fmtMs(s.runnerProcessMs.median).padEnd(18)} ${fmtMs(s.checkerProcessMs.median).padEnd(19)} ${s.requestsPerCheck.toFixed(1).padEnd(14)} ${JSON.stringify(s.outcomes)}`,
    );
  }
  const m = r.serveMemory as ServeMemoryFigure | undefined;
  if (m) {
    lines.push('');
    lines.push(
      `khrun serve RSS: ${m.rssMiB.start} MiB at start, ${m.rssMiB.afterFirstBatch} after the first batch, ${m.rssMiB.end} at the end (peak ${m.rssMiB.peak}); ${m.runs.recorded}/${m.runs.requested} triggered runs recorded, ${m.rejectedReports.rejected}/${m.rejectedReports.sent} malformed reports rejected, ${m.apiServerRestarts} API server restarts, ${m.seconds} s`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
