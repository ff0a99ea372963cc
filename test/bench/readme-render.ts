import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import type { AdmissionFigure } from './admission-cost.ts';
import type { LambdaCostResult } from './lambda-cost.ts';
import type { LongCheckFigure } from './long-check.ts';
import { measuredLine } from './provenance.ts';
import type { ScaleFigure } from './scale.ts';
import { fmtMs, P95_MIN_SAMPLES, type Summary } from './stats.ts';
import type { StatusRenderFigures } from './status-render.ts';
import type { SteadyStateFigure } from './steady-state.ts';
import type { TickDispatchFigure } from './tick-dispatch.ts';

// docs/performance.md's generated block, rendered from bench/results.json alone (pure; the tick-alone rows
// from bench/tick-dispatch.json while results.json has none, readme.ts): every figure in it comes from the
// file, with how it was measured and n; nothing is typed in by hand. A figure the file lacks is left out,
// never filled in.

// biome-ignore lint/suspicious/noExplicitAny: results.json is read section by section; each is checked where used.
type Results = Record<string, any>;

/** Text for a table cell: no pipes, no angle brackets that Markdown would take for HTML. */
const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

const num = (x: number | undefined, digits = 0) =>
  x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);

/** The cells median | p95 | min | max; p95 only from P95_MIN_SAMPLES samples up. */
function cells(s: Summary | undefined, f: (x: number | undefined) => string = fmtMs): string {
  if (!s) return '– | – | – | –';
  const p95 = s.n >= P95_MIN_SAMPLES ? f(s.p95) : '–';
  return `${f(s.median)} | ${p95} | ${f(s.min)} | ${f(s.max)}`;
}

const row = (figure: string, how: string, s: Summary | undefined, f?: (x: number | undefined) => string) =>
  s ? `| ${cell(figure)} | ${cell(how)} | ${s.n} | ${cells(s, f)} |` : undefined;

const TABLE_HEAD = ['| figure | how | n | median | p95 | min | max |', '|---|---|---:|---:|---:|---:|---:|'];

function table(rows: Array<string | undefined>): string[] {
  const present = rows.filter((r): r is string => r !== undefined);
  return present.length ? [...TABLE_HEAD, ...present] : [];
}

function runCost(r: Results): string[] {
  const bundle = r.cliStart?.entries?.[0];
  const others = (r.cliStart?.entries ?? []).slice(1) as Array<{
    name: string;
    exitMs: Summary;
    firstRequestMs: Summary;
  }>;
  const o = r.overhead ?? {};
  const rows = table([
    row(
      '**`khrun run` of a check that reports at once: spawn to exit**',
      `real invocation: ${bundle?.name ?? 'the bundle'}, spawned`,
      bundle?.exitMs,
    ),
    row(
      '  spawn to its first API request',
      'real invocation; the API server audit log',
      bundle?.firstRequestMs,
    ),
    ...others.map((e) => row(`  started as ${e.name}: spawn to exit`, 'real invocation', e.exitMs)),
    row(
      'one iteration: invocation to recorded outcome',
      'in-process (the runner code in the benchmark process, warm): no Node start-up',
      o.totalMs,
    ),
    row(
      '  of which the checker process (container start to exit)',
      'in-process; the process kubelet',
      o.checkerMs,
    ),
    row(
      "  khrun's own overhead (less the checker and the local kubelet's pod start)",
      'in-process',
      o.khrunOwnMs,
    ),
    row('API requests per iteration', "in-process; the runner's ServiceAccount, audit log", o.requests, (x) =>
      num(x),
    ),
  ]);
  if (!rows.length) return [];
  const lines = ['### One run', '', ...rows, ''];
  if (o.requestsByVerb)
    lines.push(
      `Requests of the last in-process iteration: ${Object.entries(o.requestsByVerb as Record<string, number>)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
      '',
    );
  if (r.cliStart?.how) lines.push(`Real invocations: ${r.cliStart.how}.`, '');
  const when = [
    ...(r.cliStart ? [`Real invocations: ${measuredLine(r.meta, 'cli-start')}`] : []),
    ...(r.overhead ? [`In-process iterations: ${measuredLine(r.meta, 'overhead')}`] : []),
  ];
  if (when.length) lines.push(when.join(' '), '');
  return lines;
}

function phases(r: Results): string[] {
  const o = r.overhead;
  if (!o) return [];
  const how = 'in-process';
  const rows = table([
    row('claim (read khcheck, compare-and-swap khstate)', how, o.claimMs),
    row('clear earlier pods and create the pod', how, o.podCreateMs),
    row('pod created to Running (the local process kubelet, not khrun)', how, o.podStartMs),
    row('report POST to noticed by the runner', how, o.reportToNoticedMs),
    row('container exit to noticed', how, o.exitToNoticedMs),
    row('record the outcome', how, o.recordMs),
  ]);
  return rows.length ? ['Phases of the in-process iteration:', '', ...rows, ''] : [];
}

function polling(r: Results): string[] {
  const p = r.pollingBaseline;
  if (!p) return [];
  return [
    "A model, not Kuberhealthy: the same iteration driven by fixed 5 s polls as v2.7.1's external checker",
    'waits (test/bench/polling-baseline.ts), in-process:',
    '',
    ...table([
      row('model: polling iteration, same check', 'in-process model', p.totalMs),
      row('model: API requests per polling iteration', 'audit log', p.requests, (x) => num(x)),
    ]),
    '',
  ];
}

/** All recorded after T, or: k of n, the last after T (a row whose runners could not run every check). */
function recordedCell(s: ScaleFigure): string {
  if (s.allRecordedMs !== undefined) return fmtMs(s.allRecordedMs);
  return `${s.recorded ?? 0} of ${s.checks} (the last after ${fmtMs(s.lastRecordedMs)})`;
}

/**
 * Requests per check, tick + runners. A tick that was spawned and whose requests are missing from the audit
 * log (0 counted) means the log is incomplete at that load, not that the tick sent nothing: no figure then.
 */
function requestsCell(s: ScaleFigure): string {
  const r = s.requests;
  if (r && r.tick === 0 && s.tickMs !== undefined)
    return `– (audit log incomplete: 0 of the tick's requests in it, ${r.runner} of the runners')`;
  return `${num(r?.perCheck, 1)} (${r?.tick} + ${r?.runner})`;
}

/**
 * Runner Jobs are counted when the row ends. A finished Job is deleted one interval after it finished
 * (clamped to 10 min), so in a row longer than that the early batches' Jobs are gone by then: fewer Jobs
 * than runner pods says so rather than undercounting silently.
 */
function jobsCell(s: ScaleFigure): string {
  return s.runnerJobs < s.runnerPods
    ? `${s.runnerJobs} left at the end of ${s.runnerPods}`
    : `${s.runnerJobs}`;
}

/** Outcomes, and the checks a runner could not run, with its error. */
function outcomesCell(s: ScaleFigure): string {
  const recorded = Object.entries(s.outcomes ?? {}).map(([k, v]) => `${v} ${k}`);
  const failed = Object.entries(s.runnerFailures ?? {}).map(([k, v]) => `${v} not run (${cell(k)})`);
  return [...recorded, ...failed].join(', ');
}

/** Rows in the shape scale.ts wrote before batch runners (an array; one Job per check, a Node checker). */
function legacyScale(rows: Results[]): string[] {
  return [
    '### Scale: one tick over N due checks (measured before batch runners and the concurrent tick)',
    '',
    'One khrun tick (the bundle, spawned) dispatching one Job per due check through the real tick → Job path; every runner and checker (a Node program) a process of the one process kubelet, n=1 per row. Not measured again since: `npm run bench -- --only scale` replaces these rows.',
    '',
    '| due checks | tick | all recorded | tick peak RSS | runner peak RSS (median) | API requests per check | outcomes |',
    '|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (s) =>
        `| ${s.checks} | ${fmtMs(s.tickMs)} | ${fmtMs(s.allFinishedMs)} | ${num(s.tickPeakRssMiB)} MiB | ${num(s.runnerPeakRssMiB?.median)} MiB | ${num(s.requestsPerCheck, 1)} | ${Object.entries(
          s.outcomes ?? {},
        )
          .map(([k, v]) => `${v} ${k}`)
          .join(', ')} |`,
    ),
    '',
  ];
}

function admission(r: Results): string[] {
  const a = r.admission as AdmissionFigure | undefined;
  if (!a?.rows?.length) return [];
  const ms = (x: number | undefined) => (x === undefined ? '–' : `${x.toFixed(1)} ms`);
  return [
    "### A checker pod create's admission cost, by khchecks in its namespace",
    '',
    "infra/deploy's policy `khrun-runner-checker-pod-spec` takes every khcheck of the pod's namespace as a",
    'parameter, and the API server evaluates it once per parameter (a parameter the pod does not name stops at',
    'its match conditions): the cost of one checker pod grows with the khchecks beside it, and a tick over all',
    'of them pays it once per check. The admin column is the same create without the policies (they match only',
    "khrun-runner; the bindings' parameters are resolved and the match conditions evaluated for it too).",
    '',
    ...admissionCpu(a),
    ...table(
      a.rows.flatMap((x) => [
        row(
          `${x.khchecksInNamespace} khchecks: as khrun-runner`,
          'dry-run create, request to answer',
          x.runnerMs,
          ms,
        ),
        row(
          `${x.khchecksInNamespace} khchecks: as the admin`,
          'dry-run create, request to answer',
          x.adminMs,
          ms,
        ),
      ]),
    ),
    '',
    `${a.how}. ${measuredLine(r.meta, 'admission')}`,
    '',
  ];
}

/** The API server's CPU a create by namespace size, and the policies' share of it (runner less admin). */
function admissionCpu(a: AdmissionFigure): string[] {
  const rows = a.rows.filter(
    (x) => x.runnerApiServerCpuMs !== undefined && x.adminApiServerCpuMs !== undefined,
  );
  if (!rows.length) return [];
  return [
    "| khchecks in the namespace | API server CPU a create, as khrun-runner | as the admin | the policies' share |",
    '|---:|---:|---:|---:|',
    ...rows.map(
      (x) =>
        `| ${x.khchecksInNamespace} | ${x.runnerApiServerCpuMs!.toFixed(1)} ms | ${x.adminApiServerCpuMs!.toFixed(1)} ms | ${(x.runnerApiServerCpuMs! - x.adminApiServerCpuMs!).toFixed(1)} ms |`,
    ),
    '',
  ];
}

function scale(r: Results): string[] {
  if (Array.isArray(r.scale)) return legacyScale(r.scale);
  const figures = (r.scale?.figures ?? []) as ScaleFigure[];
  if (!figures.length) return [];
  const lines = [
    '### Scale: one tick over N due checks',
    '',
    `${r.scale.how ?? ''}. ${measuredLine(r.meta, 'scale')}`,
    '',
    '| due checks | batch size | tick (spawn to exit) | all recorded | runner Jobs | runner pods | checker pods | tick peak RSS | runner peak RSS (median, max) | API requests per check (tick + runners) | outcomes |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const s of figures) {
    lines.push(
      `| ${s.checks} | ${s.batchSize} | ${fmtMs(s.tickMs)} | ${recordedCell(s)} | ${jobsCell(s)} | ${s.runnerPods} | ${s.checkerPods} | ${num(s.tickPeakRssMiB)} MiB | ${num(s.runnerPeakRssMiB?.median)} MiB, ${num(s.runnerPeakRssMiB?.max)} MiB (n=${s.runnerPeakRssMiB?.n ?? 0}) | ${requestsCell(s)} | ${outcomesCell(s)} |`,
    );
  }
  if (r.scale.notes?.length) lines.push('', ...r.scale.notes.map((n: string) => `- ${n}`));
  return [...lines, ''];
}

/** The run rate the interval asks for, when the machine fell short of it. */
function asked(s: SteadyStateFigure): string {
  const seconds = Number(/^(\d+)s$/.exec(s.runInterval)?.[1]);
  const wanted = (s.checks * 60) / seconds;
  return Number.isFinite(wanted) && s.runsPerMinute < wanted * 0.9
    ? ` where the interval asks for ${num(wanted)}: this machine's one process kubelet starts only a few pods a second, so the checks ran less often than their interval`
    : '';
}

function tick(r: Results): string[] {
  const figures = (r.tick ?? []) as TickDispatchFigure[];
  if (!figures.length) return [];
  const mib = (x: number | undefined) => (x === undefined ? '–' : `${num(x)} MiB`);
  const source = r.tickSource as { file: string; build?: { commit?: string; builtAt?: string } } | undefined;
  return [
    '### The tick alone',
    '',
    ...table(
      figures.flatMap((f) => [
        row(
          `${f.checks} due checks, batch size ${f.batchSize}, concurrency ${f.concurrency}: tick spawn to exit (${f.runnerJobs} runner Jobs, ${f.tickRequests} tick requests)`,
          'real invocation (the bundle, spawned)',
          f.tickMs,
        ),
        row(`  ${f.checks} due checks: the tick's peak RSS`, 'its own maxRSS at exit', f.tickPeakRssMiB, mib),
      ]),
    ),
    '',
    figures[0]?.how ? `${figures[0].how}.` : '',
    '',
    source ? '' : measuredLine(r.meta, 'tick'),
    '',
    source
      ? `From \`${source.file}\` (written by \`test/bench/tick-dispatch.ts\`${source.build?.commit ? `, build ${String(source.build.commit).slice(0, 12)}` : ''}${source.build?.builtAt ? ` of ${String(source.build.builtAt).slice(0, 10)}` : ''}), which results.json does not hold yet.`
      : '',
    '',
  ];
}

function steady(r: Results): string[] {
  const s = r.steadyState as (SteadyStateFigure & { sized?: string }) | undefined;
  if (!s) return [];
  const count = (x: number | undefined) => num(x);
  const how = 'API list count after each tick, once settled';
  return [
    `### Objects in etcd at steady state: ${s.checks} checks every ${s.runInterval}`,
    '',
    measuredLine(r.meta, 'steady-state'),
    '',
    s.sized ? `Sized when it was measured, from the scale rows of that time: ${s.sized}.` : '',
    '',
    `${s.how}. Finished runner Jobs were kept ${s.finishedJobTtlSeconds ?? '–'} s; ${num(s.runsPerMinute)} check runs completed a minute while settled${asked(s)}. Finished checker pods are kept for their logs, the newest \`KHRUN_KEEP_FINISHED_PODS\` (default 3) of each check: they rise until the checks' third run, to 3 per check by default.`,
    '',
    s.firstSettled && s.lastSettled
      ? `First and last settled sample: ${(Object.keys(s.lastSettled) as Array<keyof typeof s.lastSettled>).map((k) => `${k} ${s.firstSettled[k]} → ${s.lastSettled[k]}`).join(', ')}.`
      : '',
    '',
    ...table([
      row('runner Jobs', how, s.settled.runnerJobs, count),
      row('runner pods', how, s.settled.runnerPods, count),
      row('checker pods', how, s.settled.checkerPods, count),
      row('khstates', how, s.settled.khstates, count),
      row(`events (the checks' namespace and ${DEPLOY_NAMESPACE})`, how, s.settled.events, count),
      row(
        `all objects the API server stores (every kind; ${num(s.objectsBefore)} before the checks were created)`,
        'apiserver_storage_objects, summed',
        s.settled.allObjects,
        count,
      ),
    ]),
    '',
  ];
}

function longCheck(r: Results): string[] {
  const l = r.longCheck as LongCheckFigure | undefined;
  if (!l) return [];
  const loops = Object.entries(l.khstateWritesByLoop ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    `### API requests during a ${num(l.checkSeconds / 60, l.checkSeconds < 60 ? 1 : 0)}-minute check`,
    '',
    `${l.requests} requests in ${fmtMs(l.runMs)} (${l.how}). khstate writes by loop: ${loops || 'none'}. By verb: ${Object.entries(
      l.byVerbResource ?? {},
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}. ${measuredLine(r.meta, 'long-check')}`,
    '',
  ];
}

function lambda(r: Results): string[] {
  const l = r.lambdaCost as LambdaCostResult | undefined;
  if (!l) return [];
  const gb = (x: number | undefined) => num(x, 4);
  const mem = l.maxMemoryUsedMiB;
  const lines = [
    '### Lambda cost per run',
    '',
    `${l.how}. Memory: runCheck ${l.memoryMb.runCheck} MB, report ${l.memoryMb.report} MB (serverless.yml)${mem ? `; Max Memory Used (the runtime process's peak RSS): runCheck ${num(mem.runCheck.max)} MiB, report ${num(mem.report.max)} MiB (the highest of n=${mem.runCheck.n} and n=${mem.report.n} environments)` : ''}. ${measuredLine(r.meta, 'lambda-cost')}`,
    '',
    '| check | checks per invocation | n | runCheck duration (median, min, max) | report duration per check (median) | GB-s per invocation (median) | **GB-s per check run** (runCheck share + report) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of l.cases) {
    lines.push(
      `| reports after ${c.checkSeconds} s | ${c.batch} | ${c.runCheckMs.n} | ${fmtMs(c.runCheckMs.median)}, ${fmtMs(c.runCheckMs.min)}, ${fmtMs(c.runCheckMs.max)} | ${fmtMs(c.reportMs.median)} (n=${c.reportMs.n}) | ${gb(c.runCheckGbSeconds.median)} | **${gb(c.gbSecondsPerCheck)}** |`,
    );
  }
  lines.push('');
  const cold = l.coldStart;
  const fns = (['runCheck', 'tick', 'trigger', 'report', 'status'] as const).filter((f) => cold?.[f]);
  if (cold && fns.length) {
    lines.push(
      '#### Cold starts',
      '',
      `${cold.how}. The difference is what a cold start adds; Lambda bills it (the init phase) once per execution environment.`,
      '',
      '| function | n | first invocation (median, min, max) | warm invocation (median, min, max) | billed duration, first / warm (median) |',
      '|---|---:|---:|---:|---:|',
    );
    for (const f of fns) {
      const c = cold[f]!;
      lines.push(
        `| ${f} | ${c.firstMs.n} | ${fmtMs(c.firstMs.median)}, ${fmtMs(c.firstMs.min)}, ${fmtMs(c.firstMs.max)} | ${fmtMs(c.warmMs.median)}, ${fmtMs(c.warmMs.min)}, ${fmtMs(c.warmMs.max)} | ${fmtMs(c.firstDurationMs.median)} / ${fmtMs(c.warmDurationMs.median)} |`,
      );
    }
    lines.push('');
  }
  return lines;
}

function other(r: Results): string[] {
  const lines: string[] = [];
  const bundles = (r.bundles ?? []) as Array<{
    file: string;
    codeFile?: string;
    bytes: number;
    importMs: Summary;
  }>;
  if (bundles.length)
    lines.push(
      `Bundles, imported in a fresh Node process (spawned): ${bundles
        .map(
          (b) =>
            `\`${b.file}\`${b.codeFile ? ` (its code \`${b.codeFile}\`)` : ''} ${num(b.bytes / 1024)} KiB, ${fmtMs(b.importMs.median)} (n=${b.importMs.n})`,
        )
        .join('; ')}. ${measuredLine(r.meta, 'cli-start')}`,
      '',
    );
  const m = r.serveMemory;
  if (m?.rssMiB)
    lines.push(
      `\`khrun serve\` (the bundle, spawned) RSS: ${m.rssMiB.start} MiB at start, ${m.rssMiB.afterFirstBatch} MiB after the first batch, ${m.rssMiB.end} MiB at the end (peak ${m.rssMiB.peak}); ${m.runs.recorded}/${m.runs.requested} triggered runs recorded, ${m.rejectedReports.rejected}/${m.rejectedReports.sent} malformed reports rejected, ${m.apiServerRestarts} API server restarts in ${m.seconds} s (${m.how}). ${measuredLine(r.meta, 'serve-memory')}`,
      '',
    );
  return lines;
}

function statusRender(r: Results): string[] {
  const s = r.statusRender as StatusRenderFigures | undefined;
  if (!s?.routes?.length) return [];
  const kib = (b: number) => `${num(b / 1024)} KiB`;
  return [
    '### Rendering the status routes',
    '',
    `The status routes' handlers over ${s.checks} checks:`,
    '',
    ...table(
      s.routes.map((x) =>
        row(`${x.label}: ${kib(x.bytes)}, ${kib(x.gzipBytes)} gzipped`, 'in-process, handler only', x.ms),
      ),
    ),
    '',
    `${s.how}. ${measuredLine(r.meta, 'status-render')}`,
    '',
  ];
}

function provenance(r: Results): string[] {
  const meta = r.meta ?? {};
  const m = meta.machine ?? {};
  const v = meta.versions ?? {};
  const lines = [
    `Measured on ${m.os ?? '?'}, ${m.cores ?? '?'} cores (${m.cpu ?? '?'}), ${m.memoryGiB ?? '?'} GiB, Node ${v.node ?? '?'}, Kubernetes ${v.kubernetes ?? '?'}, etcd ${v.etcd ?? '?'}: a ${meta.mode ?? '?'} run on ${String(meta.date ?? '?').slice(0, 10)}${meta.build ? ` of ${String(meta.build.commit).slice(0, 12)}${meta.build.dirty ? ' (working tree changed)' : ''}` : ''}.`,
  ];
  for (const u of meta.updates ?? [])
    lines.push(
      `Measured again on ${String(u.date).slice(0, 16).replace('T', ' ')} UTC (${u.mode}${u.build ? `, ${String(u.build.commit).slice(0, 12)}${u.build.dirty ? ' + changes' : ''}` : ''}${u.seconds ? `, ${Math.round(u.seconds / 60)} min` : ''}${u.loadAverage ? `, load average ${u.loadAverage.join(' / ')} at the end` : ''}): ${u.sections.join(', ')}.`,
    );
  return [...lines.map((l) => `- ${l}`), ''];
}

/** The generated block of docs/performance.md (between its markers), from results.json's content. */
export function renderPerformance(r: Results, extra: Array<(r: Results) => string[]> = []): string {
  return [
    '`npm run bench` measures against the local cluster (real kube-apiserver, etcd, controller manager and',
    'scheduler; pods are processes of the process kubelet) and writes `bench/results.json`; it builds the bundles',
    'it measures first (`.khrun/bench-dist`) and records the build. `npm run bench -- --quick` (CI) measures',
    'fewer samples and one small scale size into `bench/results-quick.json`; `--only SECTION,...` measures',
    'some sections again; `--readme-only` rewrites this block from `bench/results.json` without measuring.',
    'The scale section measures its rows while its time budget lasts (`KHRUN_BENCH_SCALE_MINUTES`, default 12);',
    '`KHRUN_BENCH_SCALE_ROWS=2000x25,1000x25` measures just those rows (checks x batch size) and keeps the others.',
    'This block is generated from `bench/results.json` (test/bench/readme-render.ts); do not edit it by hand.',
    'API requests are counted at the API server (its audit log) by the ServiceAccount of the actor named;',
    'watch events are not requests. p95 is given only from 20 samples up (–).',
    '',
    ...provenance(r),
    ...runCost(r),
    ...phases(r),
    ...polling(r),
    ...extra.flatMap((f) => f(r)),
    ...admission(r),
    ...scale(r),
    ...tick(r),
    ...steady(r),
    ...longCheck(r),
    ...lambda(r),
    ...other(r),
    ...statusRender(r),
  ]
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
}

/** The page that holds the generated block, from the repository root. */
export const PERFORMANCE_PAGE = 'docs/performance.md';

export const BEGIN =
  '<!-- bench:begin (written by `npm run bench` from bench/results.json; do not edit by hand) -->';
export const END = '<!-- bench:end -->';

/** The page with the text between the markers replaced; the markers must be there, once each. */
export function replaceBetweenMarkers(readme: string, body: string): string {
  const a = readme.indexOf(BEGIN);
  const b = readme.indexOf(END);
  if (a < 0 || b < a || readme.indexOf(BEGIN, a + 1) >= 0)
    throw new Error(`${PERFORMANCE_PAGE} must hold ${BEGIN} and then ${END}, once each`);
  return `${readme.slice(0, a + BEGIN.length)}\n${body}\n${readme.slice(b)}`;
}
