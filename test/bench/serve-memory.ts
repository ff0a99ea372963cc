import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type BenchCluster, repoRoot, startBenchCluster } from './bench-cluster.ts';
import { buildForBench } from './build-for-bench.ts';
import { createBenchCheck } from './overhead.ts';
import { memoryOf, round, startSampler, startServeProcess } from './serve-process.ts';

// `khrun serve`'s memory over many triggered runs (each: a checker pod reporting to serve, its watches
// opened and closed, its khstate written and seen by serve's cache), many rejected reports, and API server
// restarts that break every watch serve holds. The process is the shipped bundle (khrun.mjs, built by
// the benchmark), spawned against the local cluster; its RSS is read from /proc every second. Bounded in count and
// time. Run alone (`tsx test/bench/serve-memory.ts [--quick]`, a cluster of its own) or from `npm run bench`.

export interface ServeMemoryFigure {
  how: string;
  runs: { requested: number; recorded: number; failed: number; failures: string[] };
  rejectedReports: { sent: number; rejected: number };
  apiServerRestarts: number;
  seconds: number;
  rssMiB: {
    start: number;
    afterFirstBatch: number;
    end: number;
    peak: number;
    growthAfterFirstBatch: number;
  };
  /** Per batch: runs and reports so far, RSS at its end (after a restart, if one followed it). */
  batches: Array<{ runs: number; reports: number; restarts: number; rssMiB: number }>;
  samples: Array<{ atS: number; rssMiB: number; runs: number; reports: number; restarts: number }>;
}

/** A checker that reports success at once, the way a careful client does (header, one POST). */
const CHECKER =
  "fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'content-type': 'application/json', 'kh-run-uuid': process.env.KH_RUN_UUID }, body: '{\"OK\":true,\"Errors\":[]}' }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1));";
const MALFORMED = ['{"OK":', '[]', '{"OK":false,"Errors":[]}', 'null', '{}'];

export interface ServeMemorySize {
  runs: number;
  reports: number;
  restarts: number;
  checks: number;
  budgetMs: number;
}

export async function measureServeMemory(
  bench: BenchCluster,
  opts: { quick: boolean; log: (line: string) => void; dist: string; size?: Partial<ServeMemorySize> },
): Promise<ServeMemoryFigure> {
  const n: ServeMemorySize = {
    ...(opts.quick
      ? { runs: 40, reports: 2_000, restarts: 1, checks: 4, budgetMs: 240_000 }
      : { runs: 2_000, reports: 20_000, restarts: 5, checks: 8, budgetMs: 1_500_000 }),
    ...opts.size,
  };
  const deadline = Date.now() + n.budgetMs;
  const checks = Array.from({ length: n.checks }, (_, i) => `mem-${i}`);
  for (const c of checks) await createBenchCheck(bench, c, CHECKER);
  const outdir = opts.dist;
  const token = randomBytes(24).toString('hex');
  const serve = await startServeProcess(
    join(outdir, 'khrun.mjs'),
    ['--host', bench.cluster.hostIp, '--port', '0', '--namespaces', bench.namespace],
    {
      KUBECONFIG: bench.cluster.kubeconfigPath,
      KHRUN_TRIGGER_TOKEN: token,
      // As deployed: triggered runs' pods get signed reporting URLs; the bare path is refused.
      KHRUN_REPORT_KEY: randomBytes(24).toString('hex'),
      KHRUN_TRIGGER_MAX_RUNS: String(n.checks),
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
  );
  const count = { runs: 0, reports: 0, restarts: 0 };
  const sampler = startSampler(serve.pid, 1_000, () => ({ ...count }));
  const startedMs = Date.now();
  const failures: string[] = [];
  let recorded = 0;
  let rejected = 0;
  const batches: ServeMemoryFigure['batches'] = [];
  try {
    await sampler.take();
    const per = {
      runs: Math.ceil(n.runs / (n.restarts + 1)),
      reports: Math.ceil(n.reports / (n.restarts + 1)),
    };
    for (let b = 0; b <= n.restarts && Date.now() < deadline; b++) {
      // Runs: one worker per check, each triggering its check and waiting for the outcome, in turn.
      const target = Math.min(n.runs, count.runs + per.runs);
      await Promise.all(
        checks.map(async (check) => {
          while (count.runs < target && Date.now() < deadline) {
            count.runs++;
            const res = await fetch(
              `${serve.base}/api/run?namespace=${bench.namespace}&check=${check}&wait=true`,
              {
                method: 'POST',
                headers: { authorization: `Bearer ${token}` },
              },
            ).catch((e: unknown) => ({ status: 0, text: async () => String(e) }));
            const text = await res.text();
            if (res.status === 200 && /"result":"recorded"/.test(text) && /"kind":"Succeeded"/.test(text))
              recorded++;
            else if (failures.length < 20) failures.push(`${check}: ${res.status} ${text.slice(0, 300)}`);
          }
        }),
      );
      // Rejected reports: malformed bodies, 32 in flight; serve must refuse each (4xx) and keep nothing.
      const until = Math.min(n.reports, count.reports + per.reports);
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (count.reports < until && Date.now() < deadline) {
            const body = MALFORMED[count.reports++ % MALFORMED.length] ?? '';
            const res = await fetch(`${serve.base}/externalCheckStatus`, { method: 'POST', body }).catch(
              () => undefined,
            );
            await res?.text();
            if (res && res.status >= 400 && res.status < 500) rejected++;
          }
        }),
      );
      if (b < n.restarts) {
        // Every watch serve holds breaks and resumes (or lists again on 410 Gone).
        await bench.cluster.controlPlane.stopApiServer();
        await bench.cluster.controlPlane.startApiServer();
        count.restarts++;
      }
      batches.push({ ...count, rssMiB: round((await memoryOf(serve.pid))?.rssMiB ?? Number.NaN) });
      opts.log(
        `  serve memory: ${count.runs} runs, ${count.reports} reports, ${count.restarts} restarts: ${batches.at(-1)?.rssMiB} MiB`,
      );
    }
    await sampler.take();
  } finally {
    sampler.stop();
  }
  const peak = (await memoryOf(serve.pid))?.peakMiB ?? Number.NaN;
  await serve.stop();
  const s = sampler.samples;
  const start = s[0]?.rssMiB ?? Number.NaN;
  const end = s.at(-1)?.rssMiB ?? Number.NaN;
  const afterFirstBatch = batches[0]?.rssMiB ?? Number.NaN;
  return {
    how: `khrun.mjs serve (the bundle the benchmark built, spawned; node ${process.version}) against the local cluster; RSS (VmRSS, VmHWM) read from /proc every 1 s; ${n.checks} checks triggered by POST /api/run?wait=true, one at a time per check, each run a checker pod reporting to serve; malformed reports 32 in flight; kube-apiserver stopped and started between batches`,
    runs: { requested: count.runs, recorded, failed: count.runs - recorded, failures },
    rejectedReports: { sent: count.reports, rejected },
    apiServerRestarts: count.restarts,
    seconds: Math.round((Date.now() - startedMs) / 1000),
    rssMiB: {
      start,
      afterFirstBatch,
      end,
      peak: round(peak),
      growthAfterFirstBatch: round(end - afterFirstBatch),
    },
    batches,
    samples: thin(s, 60),
  };
}

/** At most max samples, evenly spread, the first and last kept. */
function thin<T>(samples: T[], max: number): T[] {
  if (samples.length <= max) return samples;
  const step = (samples.length - 1) / (max - 1);
  return Array.from({ length: max }, (_, i) => samples[Math.round(i * step)] as T);
}

/** Alone: a cluster of its own; the figure goes into bench/results(-quick).json under serveMemory. */
async function main() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      reports: { type: 'string' },
      restarts: { type: 'string' },
    },
  });
  const quick = values.quick ?? false;
  const size: Partial<ServeMemorySize> = {};
  if (values.runs) {
    size.runs = Number(values.runs);
    size.budgetMs = size.runs * 3_000 + 120_000;
  }
  if (values.reports) size.reports = Number(values.reports);
  if (values.restarts) size.restarts = Number(values.restarts);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const bench = await startBenchCluster(log);
  try {
    const dist = join(repoRoot, '.khrun/bench-dist');
    await buildForBench(repoRoot, dist);
    const figure = await measureServeMemory(bench, { quick, log, size, dist });
    process.stdout.write(`${JSON.stringify({ ...figure, samples: undefined }, null, 2)}\n`);
    const file = join(repoRoot, 'bench', quick ? 'results-quick.json' : 'results.json');
    const results = JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as Record<string, unknown>;
    await writeFile(file, `${JSON.stringify({ ...results, serveMemory: figure }, null, 2)}\n`);
    log(`wrote serveMemory into ${file}`);
  } finally {
    await bench.cluster.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
