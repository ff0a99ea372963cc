import { CHECK_KINDS, type CheckKind } from './kh-checks.ts';
import type { KindFigure } from './kh-figures.ts';
import type { KuberhealthyFigures } from './kuberhealthy-baseline.ts';
import { type Meta, measuredLine } from './provenance.ts';
import { fmtMs, type Summary } from './stats.ts';

// docs/performance.md's part for the kuberhealthy section (pure, from results.json alone): each Kuberhealthy
// beside khrun in the same run, each figure as median (min–max, n), and khrun's median over the peer's. A
// figure the file lacks is left out.

const WHAT: Record<CheckKind, string> = {
  'test-check': "Kuberhealthy's test-check, reports at once",
  'pod-status': 'pod-status-check',
  'exit-3': 'a checker that exits 3 without reporting',
};

const fig = (s: Summary | undefined, f: (x: number) => string) =>
  !s || s.n === 0 ? '–' : `${f(s.median)} (${f(s.min)}–${f(s.max)}, n=${s.n})`;
const mib = (x: number) => x.toFixed(0);
const one = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
/** khrun's median over the peer's: below 1, khrun took less. */
const ratio = (khrun: Summary | undefined, peer: Summary | undefined) =>
  khrun?.n && peer?.n && peer.median > 0 ? `${(khrun.median / peer.median).toFixed(2)}×` : '–';
const loads = (l: { before: number[]; after: number[] }) =>
  `${l.before.join(' / ')} before, ${l.after.join(' / ')} after`;

type Pair = KuberhealthyFigures['pairs']['v2'];
const LABEL = { v2: 'Kuberhealthy v2.7.1 (khchecks)', v3: 'Kuberhealthy v3.0.0 (HealthChecks)' } as const;
const KHRUN_LABEL = { v2: 'khrun beside it (HealthChecks)', v3: 'khrun beside it (khchecks)' } as const;

function timeTable(
  pairs: Array<['v2' | 'v3', Pair]>,
  pick: (c: KindFigure | undefined) => Summary | undefined,
): string[] {
  const head = pairs.flatMap(([p]) => [LABEL[p], KHRUN_LABEL[p], `khrun ÷ ${p}`]);
  return [
    `| check | ${head.join(' | ')} |`,
    `|---|${head.map(() => '---:').join('|')}|`,
    ...CHECK_KINDS.map(
      (kind) =>
        `| ${WHAT[kind]} | ${pairs
          .flatMap(([, x]) => {
            const peer = pick(x.peer.checks[kind]);
            const khrun = pick(x.khrun.checks[kind]);
            return [fig(peer, fmtMs), fig(khrun, fmtMs), ratio(khrun, peer)];
          })
          .join(' | ')} |`,
    ),
  ];
}

/** The Performance section's part for the real Kuberhealthy beside khrun; [] when results.json has none. */
export function kuberhealthyMarkdown(r: { kuberhealthy?: KuberhealthyFigures; meta?: Meta }): string[] {
  const k = r.kuberhealthy;
  if (!k?.pairs) return [];
  const pairs = (['v2', 'v3'] as const)
    .filter((p) => k.pairs[p])
    .map((p) => [p, k.pairs[p]] as ['v2' | 'v3', Pair]);
  const conditions = pairs.map(
    ([p, x]) =>
      `${p} pair: ${x.windowSeconds} s measured, load average ${loads(x.loadAverage)}${x.complete ? '' : ', ended at its deadline before every check had its runs'}${x.khrun.skippedFires ? `, ${x.khrun.skippedFires} khrun fires skipped while the last Job ran` : ''}`,
  );
  const requests = pairs.flatMap(([p, x]) => [
    `| ${LABEL[p]} | ${x.peer.requests.total} | ${x.peer.requests.finishedRuns} | ${one(x.peer.requests.perFinishedRun)} | RSS ${fig(x.peer.rssMiB, mib)}, peak ${mib(x.peer.peakRssMiB)}, always on |`,
    `| ${KHRUN_LABEL[p]} | ${x.khrun.requests.total} | ${x.khrun.requests.finishedRuns} | ${one(x.khrun.requests.perFinishedRun)} | peak per runner ${fig(x.khrun.runnerPeakRssMiB, mib)}, only while it runs |`,
  ]);
  return [
    '### The real Kuberhealthy beside khrun, at the same time',
    '',
    `${k.how.replaceAll('|', '\\|')} (${k.mode} mode; ${conditions.join('; ')}.) ${measuredLine(r.meta, 'kuberhealthy')}`,
    '',
    'Run start to outcome (the object first carrying the run, to the object first carrying its result):',
    '',
    ...timeTable(pairs, (c) => c?.startToOutcomeMs),
    '',
    "**End to end from the schedule**: due by the actor's schedule (khrun: its Job created, as a CronJob would) to the outcome. For khrun this holds the Job, its pod and the runner's start, which the table above does not:",
    '',
    ...timeTable(pairs, (c) => c?.dueToOutcomeMs),
    '',
    'API requests of each identity over the measured window, per outcome recorded in it, and memory:',
    '',
    '| actor | requests | outcomes | requests per outcome | memory (MiB) |',
    '|---|---:|---:|---:|---|',
    ...requests,
    '',
  ];
}
