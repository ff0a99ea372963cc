import { CHECK_KINDS, type CheckKind } from './kh-checks.ts';
import type { ActorFigure } from './kh-figures.ts';
import type { KuberhealthyFigures } from './kuberhealthy-baseline.ts';
import { fmtMs, type Summary } from './stats.ts';

// docs/performance.md's rows for the kuberhealthy section (pure, from results.json alone): the four actors
// side by side, each figure as median (min–max, n). A figure the file lacks is left out.

const WHAT: Record<CheckKind, string> = {
  'test-check': "Kuberhealthy's test-check, reports at once",
  'pod-status': 'pod-status-check',
  'pod-restarts': 'pod-restarts-check',
  'exit-3': 'a checker that exits 3 without reporting',
  long: 'test-check reporting after a delay (the long check)',
};

const fig = (s: Summary | undefined, f: (x: number) => string) =>
  !s || s.n === 0 ? '–' : `${f(s.median)} (${f(s.min)}–${f(s.max)}, n=${s.n})`;
const count = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));
const mib = (x: number) => x.toFixed(0);

/** The Performance section's part for the real Kuberhealthy baselines; [] when results.json has none. */
export function kuberhealthyMarkdown(r: { kuberhealthy?: KuberhealthyFigures }): string[] {
  const k = r.kuberhealthy;
  if (!k?.v2 || !k.v3) return [];
  const actors: ActorFigure[] = [k.v2.kuberhealthy, k.v2.khrun, k.v3.kuberhealthy, k.v3.khrun];
  const line = (name: string, cells: string[]) => `| ${name} | ${cells.join(' | ')} |`;
  const each = (f: (a: ActorFigure) => string) => actors.map(f);
  const [v2, , v3] = [k.v2.kuberhealthy, k.v2.khrun, k.v3.kuberhealthy];
  return [
    '**The real Kuberhealthy beside khrun**, same checks, same benchmark run ' +
      `(${k.mode} mode): ${k.how.replaceAll('|', '\\|')}`,
    '',
    line('figure', [
      'Kuberhealthy v2.7.1 daemon (khchecks)',
      'khrun run --check',
      'Kuberhealthy v3.0.0 controller (HealthChecks)',
      'khrun run --healthcheck',
    ]),
    '|---|---:|---:|---:|---:|',
    ...CHECK_KINDS.map((kind) =>
      line(
        `${WHAT[kind]}: run start to outcome`,
        each((a) => fig(a.checks[kind]?.toOutcomeMs, fmtMs)),
      ),
    ),
    ...CHECK_KINDS.map((kind) =>
      line(
        `${WHAT[kind]}: API requests per run`,
        each((a) => fig(a.checks[kind]?.requestsPerRun, count)),
      ),
    ),
    line(
      'API requests a minute during the long check',
      each((a) => fig(a.checks.long?.requestsPerMinuteDuringRun, count)),
    ),
    line('API requests a minute besides the runs, while checks run', [
      count(v2.backgroundPerMinuteWhileRunning),
      '– (each request is a run’s)',
      count(v3.backgroundPerMinuteWhileRunning),
      '– (each request is a run’s)',
    ]),
    line('API requests a minute at rest (no check due)', [
      fig(v2.restPerMinute, count),
      '– (no khrun process between runs)',
      fig(v3.restPerMinute, count),
      '– (no khrun process between runs)',
    ]),
    line('memory (MiB)', [
      `RSS ${fig(v2.rssMiB, mib)}, peak ${mib(v2.peakRssMiB)}, always on`,
      `peak per run ${fig(k.v2.khrun.runnerPeakRssMiB, mib)}, only while it runs`,
      `RSS ${fig(v3.rssMiB, mib)}, peak ${mib(v3.peakRssMiB)}, always on`,
      `peak per run ${fig(k.v3.khrun.runnerPeakRssMiB, mib)}, only while it runs`,
    ]),
    '',
  ];
}
