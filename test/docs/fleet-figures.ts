import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

// The outage figures of docs/multi-cluster.md, rendered from what test/integration/fleet.test.ts measured
// (it writes .khrun/fleet-figures.json): kept in bench/fleet-outage.json, and the table between the markers.
//
//   npx tsx test/docs/fleet-figures.ts [.khrun/fleet-figures.json]

const root = resolve(import.meta.dirname, '../..');
const PAGE = join(root, 'docs/multi-cluster.md');
const KEPT = join(root, 'bench/fleet-outage.json');
const BEGIN = '<!-- fleet-figures:begin (npx tsx test/docs/fleet-figures.ts) -->';
const END = '<!-- fleet-figures:end -->';

export interface FleetFigures {
  how: string;
  loadAverage: string;
  sharedMs: Record<'bothUp' | 'secondKilled' | 'secondFrozen', number[]>;
  wallMs: Record<'bothUp' | 'secondKilled' | 'secondFrozen', number[]>;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const range = (xs: number[]) => `${Math.min(...xs)}–${Math.max(...xs)}`;

/** The table: per case, the healthy cluster's own tick time and the whole process's, median and range. */
export function renderFleetFigures(f: FleetFigures): string {
  const rows: Array<[string, keyof FleetFigures['sharedMs']]> = [
    ['both clusters up', 'bothUp'],
    ["second cluster's API server killed (connection refused)", 'secondKilled'],
    ['second cluster frozen (SIGSTOP; `--cluster-timeout 5s`)', 'secondFrozen'],
  ];
  return [
    BEGIN,
    '',
    "| case | n | healthy cluster's tick, ms: median (range) | whole `khrun tick` process, ms: median (range) |",
    '|---|---|---|---|',
    ...rows.map(
      ([what, key]) =>
        `| ${what} | ${f.sharedMs[key].length} | ${median(f.sharedMs[key])} (${range(f.sharedMs[key])}) | ${median(f.wallMs[key])} (${range(f.wallMs[key])}) |`,
    ),
    '',
    `How: ${f.how}; load average ${f.loadAverage} at the end.`,
    '',
    END,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const from = resolve(process.argv[2] ?? join(root, '.khrun/fleet-figures.json'));
  const figures = JSON.parse(await readFile(from, 'utf8')) as FleetFigures;
  await writeFile(KEPT, `${JSON.stringify(figures, null, 2)}\n`);
  const page = await readFile(PAGE, 'utf8');
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${PAGE} has no ${BEGIN} ... ${END} block`);
  await writeFile(PAGE, page.slice(0, start) + renderFleetFigures(figures) + page.slice(end + END.length));
  console.log(`${PAGE} and ${KEPT} written from ${from}`);
}
