import { CHECK_KINDS } from './kh-checks.ts';
import type { ActorFigure } from './kh-figures.ts';
import type { KuberhealthyFigures } from './kuberhealthy-baseline.ts';
import { fmtMs, type Summary } from './stats.ts';

const cell = (s: Summary | undefined, f: (n: number) => string) =>
  !s || s.n === 0 ? '-' : `${f(s.median)} [${f(s.min)}–${f(s.max)}] n=${s.n}`;
const num = (n: number) => n.toFixed(n < 10 && !Number.isInteger(n) ? 1 : 0);

/** The section's lines of the benchmark's printed table: the four actors side by side. */
export function kuberhealthyLines(k: KuberhealthyFigures | undefined): string[] {
  if (!k) return [];
  const actors: Array<[string, ActorFigure]> = [
    ['v2.7.1 daemon', k.v2.kuberhealthy],
    ['khrun --check', k.v2.khrun],
    ['v3.0.0 controller', k.v3.kuberhealthy],
    ['khrun --healthcheck', k.v3.khrun],
  ];
  const row = (name: string, cells: string[]) =>
    `${name.padEnd(26)}${cells.map((c) => c.padEnd(30)).join('')}`;
  const lines = [
    '',
    `Kuberhealthy side by side (${k.mode}; median [min–max] n; run start to outcome on the API server's clock)`,
    row(
      '',
      actors.map(([a]) => a),
    ),
  ];
  for (const kind of CHECK_KINDS)
    lines.push(
      row(
        `${kind}: to outcome`,
        actors.map(([, a]) => cell(a.checks[kind].toOutcomeMs, fmtMs)),
      ),
    );
  for (const kind of CHECK_KINDS)
    lines.push(
      row(
        `${kind}: requests/run`,
        actors.map(([, a]) => cell(a.checks[kind].requestsPerRun, num)),
      ),
    );
  lines.push(
    row(
      'long check: requests/min',
      actors.map(([, a]) => cell(a.checks.long.requestsPerMinuteDuringRun, num)),
    ),
  );
  const d = [k.v2.kuberhealthy, k.v3.kuberhealthy];
  lines.push(
    row('daemon background/min', [
      num(d[0]!.backgroundPerMinuteWhileRunning),
      '-',
      num(d[1]!.backgroundPerMinuteWhileRunning),
      '-',
    ]),
  );
  lines.push(
    row('at rest: requests/min', [
      cell(d[0]!.restPerMinute, num),
      'no process',
      cell(d[1]!.restPerMinute, num),
      'no process',
    ]),
  );
  lines.push(
    row('memory (MiB)', [
      `RSS ${cell(d[0]!.rssMiB, num)}, peak ${num(d[0]!.peakRssMiB)}`,
      `peak ${cell(k.v2.khrun.runnerPeakRssMiB, num)}`,
      `RSS ${cell(d[1]!.rssMiB, num)}, peak ${num(d[1]!.peakRssMiB)}`,
      `peak ${cell(k.v3.khrun.runnerPeakRssMiB, num)}`,
    ]),
  );
  return lines;
}
