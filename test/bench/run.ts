import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot, startBenchCluster } from './bench-cluster.ts';
import { buildForBench } from './build-for-bench.ts';
import { measureBundles, measureCliStart } from './cold-start.ts';
import {
  admissionSection,
  type FleetContext,
  lambdaSection,
  scaleSection,
  startLongCheckSection,
  steadyStateSection,
  tickSection,
} from './fleet-sections.ts';
import { fleetBesideV3Section } from './fleet-v3-section.ts';
import { kuberhealthyImages, measureKuberhealthy } from './kuberhealthy-baseline.ts';
import {
  createBenchCheck,
  INSTANT_RUN_REQUEST_BUDGET,
  type IterationSample,
  measureIteration,
} from './overhead.ts';
import { regenerateReadme, SECTION_RENDERERS } from './readme.ts';
import { renderPerformance } from './readme-render.ts';
import { benchEnvironment, writeResultsFile } from './results-file.ts';
import type { ExitedProcess } from './scale.ts';
import { measureServeMemory } from './serve-memory.ts';
import { summarize } from './stats.ts';
import { measureStatusRender } from './status-render.ts';

// npm run bench [-- --quick] [-- --only SECTION,...] [-- --readme-only]: khrun's cost per run, in time, API
// requests, memory and Lambda GB-seconds, against the local cluster. Writes bench/results.json, prints the
// figures as docs/performance.md's generated block and rewrites that block from bench/results.json
// (--readme-only: only that, without measuring).
// It builds what it measures first (into .khrun/bench-dist, never a dist/ left by an earlier build) and
// records the build's identity. --only measures the named sections and replaces just those in the results
// file, noting when and from which build (meta.updates). Never fails on a figure: it fails only when
// something it measures did not work.

const SECTIONS = [
  'overhead',
  'kuberhealthy',
  'cli-start',
  'long-check',
  'admission',
  'scale',
  'fleet',
  'tick',
  'steady-state',
  'lambda-cost',
  'serve-memory',
  'status-render',
] as const;
/** Sections that take long and run in a full benchmark only. */
const FULL_ONLY: readonly string[] = ['steady-state', 'tick'];
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    'readme-only': { type: 'boolean', default: false },
  },
});
if (values['readme-only']) {
  const changed = await regenerateReadme(repoRoot);
  process.stderr.write(`docs/performance.md generated block ${changed ? 'rewritten' : 'already current'}\n`);
  process.exit(0);
}
const quick = values.quick ?? false;
const only = values.only?.split(',').map((s) => s.trim());
for (const name of only ?? []) {
  if (!(SECTIONS as readonly string[]).includes(name))
    throw new Error(`--only ${name}: no such section; the sections are ${SECTIONS.join(', ')}`);
}
const measures = (section: (typeof SECTIONS)[number]) =>
  only ? only.includes(section) : !(quick && FULL_ONLY.includes(section));
const startedAtMs = Date.now();
const sectionSeconds: Record<string, number> = {};
/** Sections that threw: the others' figures are still written, then the run fails naming these. */
const failures = new Map<string, string>();
/** Sections measured so far (timed ones): an --only run writes its results after each (checkpoint()). */
const done = new Set<string>();
async function timed<T>(
  section: string,
  measure: () => Promise<T>,
  store: (value: T) => void,
): Promise<void> {
  const t0 = Date.now();
  // Stopped from outside (a deadline): the cluster's processes go with it; an --only run keeps what it wrote.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      log(`${signal}: stopping the local cluster`);
      void bench.cluster.stop().finally(() => process.exit(130));
    });
  try {
    const value = await measure();
    sectionSeconds[section] = Math.round((Date.now() - t0) / 1000);
    store(value);
    done.add(section);
    await checkpoint();
  } catch (error) {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    failures.set(section, text);
    log(`${section} FAILED (its earlier figures are kept): ${text}`);
  }
}
const iterations = quick ? 5 : 30;
const log = (line: string) => process.stderr.write(`${line}\n`);

log('building the bundles it measures');
const dist = join(repoRoot, '.khrun/bench-dist');
const build = await buildForBench(repoRoot, dist);
log(`  ${build.commit.slice(0, 12)}${build.dirty ? ` + ${build.dirtyPaths.length} changed files` : ''}`);

const containerTimes = new Map<string, { startedAtMs: number; finishedAtMs: number }>();
const processes: ExitedProcess[] = [];
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
  measures('kuberhealthy') || measures('fleet') ? await kuberhealthyImages(log) : [],
);
const resultsFile = join(repoRoot, 'bench', quick ? 'results-quick.json' : 'results.json');
// --only replaces sections of the last results; a full run starts afresh.
const results: Record<string, unknown> = only
  ? (JSON.parse(await readFile(resultsFile, 'utf8').catch(() => '{}')) as Record<string, unknown>)
  : {};
const metaBefore = (results.meta ?? {}) as { updates?: Array<{ sections: string[] }> };

/** Writes the results file with meta for the sections measured (a partial run: these replace theirs). */
async function writeResults(measured: string[]) {
  const environment = benchEnvironment({ quick, startedAtMs, sectionSeconds, build, bench });
  await writeResultsFile(resultsFile, results, {
    only,
    measured,
    metaBefore,
    environment,
    sections: SECTIONS,
  });
}

/**
 * A partial run writes what it has after each timed section, so that a run stopped midway keeps the
 * sections it finished; a full run writes only at its end (a stopped one leaves the last file whole).
 */
async function checkpoint() {
  if (only) await writeResults(only.filter((x) => done.has(x)));
}
try {
  const runner = await bench.userKubeConfig('khrun-runner');
  const cli = await bench.userKubeConfig('khrun-cli');
  await createBenchCheck(bench, 'fast');
  await createBenchCheck(bench, 'cold');
  const cacheDir =
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
  const fleet: FleetContext = { bench, quick, dist, cacheDir, processes: () => processes, log };
  // First: Kuberhealthy v2 runs every khcheck of the cluster, so the section sets the others aside while
  // it runs; before any other section's checks exist (and before the long check starts) that is only these.
  if (measures('kuberhealthy')) {
    log('kuberhealthy: the real v2.7.1 daemon and v3.0.0 controller beside khrun, on the same checks');
    await timed(
      'kuberhealthy',
      () => measureKuberhealthy(bench, { quick, dist, log }),
      (kuberhealthy) => {
        results.kuberhealthy = kuberhealthy;
        delete results.pollingBaseline;
      },
    );
  }
  // Started first and collected before serve-memory restarts the API server: it only waits meanwhile.
  const collectLongCheck = measures('long-check') ? await startLongCheckSection(fleet) : undefined;

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
      requestBudget: INSTANT_RUN_REQUEST_BUDGET,
      // The sample that cost the most, by verb: what a run above the median spent its requests on.
      costliestRequestsByVerb: samples.reduce((a, b) => (b.requests.total > a.requests.total ? b : a))
        .requests.byVerbResource,
    };
    const over = samples.filter((s) => s.requests.total > INSTANT_RUN_REQUEST_BUDGET).length;
    if (over > 0)
      log(
        `  overhead: ${over} of ${samples.length} runs cost more than ${INSTANT_RUN_REQUEST_BUDGET} requests`,
      );
    results.overhead = overhead;
  }

  if (measures('lambda-cost')) {
    log("Lambda cost: the functions in AWS's Runtime Interface Emulator with aws-lambda-ric");
    await timed(
      'lambda-cost',
      () => lambdaSection(fleet),
      (v) => {
        results.lambdaCost = v;
      },
    );
  }

  if (measures('admission')) {
    log("admission: a checker pod create's cost by khchecks in its namespace (infra/deploy's policies)");
    await timed(
      'admission',
      () => admissionSection(fleet),
      (v) => {
        results.admission = v;
      },
    );
  }

  if (measures('scale')) {
    log('scale: one tick over N due checks, through the real tick → Job path');
    await timed(
      'scale',
      () => scaleSection(fleet, results.scale as Parameters<typeof scaleSection>[1]),
      (v) => {
        results.scale = v;
      },
    );
  }

  if (measures('fleet')) {
    log('fleet: 100, 500 and 1,000 checks due at once, khrun then Kuberhealthy v3.0.0, one at a time');
    await timed(
      'fleet',
      () => fleetBesideV3Section(fleet),
      (v) => {
        results.fleetBesideV3 = v;
      },
    );
  }

  if (collectLongCheck) {
    log('long check: waiting for it to end');
    await timed('long-check', collectLongCheck, (v) => {
      results.longCheck = v;
    });
  }

  // After scale: sized from the rate scale measured (fleet-sections.ts).
  if (measures('steady-state')) {
    log('steady state: objects in etcd with 1,000 checks on a short interval');
    await timed(
      'steady-state',
      () => steadyStateSection(fleet, results.scale as Parameters<typeof steadyStateSection>[1]),
      (v) => {
        results.steadyState = v;
      },
    );
  }

  if (measures('tick')) {
    log('tick: the tick alone over 1,000 and 2,000 due checks, 3 ticks each');
    await timed(
      'tick',
      () => tickSection(fleet),
      (v) => {
        results.tick = v;
      },
    );
  }

  if (measures('cli-start')) {
    log('cold start: bundle imports; khrun run started each way, spawn to first request and to exit');
    await timed(
      'cli-start',
      async () => ({
        bundles: await measureBundles(quick ? 2 : 5, dist),
        cliStart: await measureCliStart(bench, cli, 'cold', { reps: quick ? 2 : 20, dist, log }),
      }),
      (measured) => {
        Object.assign(results, measured);
        delete results.timeToFirstRequest;
      },
    );
  }

  if (measures('status-render')) {
    log('status render: the status routes over 500 khstates, in-process');
    await timed(
      'status-render',
      () => measureStatusRender({ checks: 500, rounds: quick ? 10 : 50, warmup: 10 }),
      (v) => {
        results.statusRender = v;
      },
    );
  }

  // Last: it restarts the API server, which the figures above must not see.
  if (measures('serve-memory')) {
    log('serve memory: runs, rejected reports and API server restarts against one khrun serve');
    results.serveMemory = await measureServeMemory(bench, { quick, log, dist });
  }

  await writeResults(only ? only.filter((x) => !failures.has(x)) : []);
  process.stdout.write(`${renderPerformance(results, SECTION_RENDERERS)}\n`);
  log(`wrote ${resultsFile.slice(repoRoot.length + 1)}`);
  if (!quick)
    log(
      `docs/performance.md generated block ${(await regenerateReadme(repoRoot)) ? 'rewritten' : 'unchanged'}`,
    );
  if (failures.size) throw new Error(`sections that did not work: ${[...failures.keys()].join(', ')}`);
} finally {
  await bench.cluster.stop();
}
