import { cpuTable } from './fleet-cpu-readme.ts';
import type { NodeRow } from './fleet-node-row.ts';
import type { FleetRow } from './fleet-v3-figures.ts';
import type { FleetBesideV3 } from './fleet-v3-section.ts';
import { type Meta, measuredLine } from './provenance.ts';
import { fmtMs, type Summary, summarize } from './stats.ts';

// docs/performance.md's part for the fleet beside Kuberhealthy v3 (pure, from results.json alone).

const SYSTEM = { khrun: 'khrun (tick + runner Jobs)', v3: 'Kuberhealthy v3.0.0' } as const;
const cell = (t: string) => t.replaceAll('|', '\\|').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const mib = (x: number | undefined) => (x === undefined ? '–' : `${x.toFixed(0)} MiB`);
const spread = (s: Summary | undefined) =>
  s?.n ? `${fmtMs(s.median)} (max ${fmtMs(s.max)}, n=${s.n})` : '–';

function recorded(r: FleetRow): string {
  if (r.allRecordedMs !== undefined) return fmtMs(r.allRecordedMs);
  return `${r.recorded} of ${r.checks} (the last after ${fmtMs(r.lastRecordedMs)})`;
}

function memory(r: FleetRow): string {
  const p = r.peakRssMiB;
  if (r.system === 'v3') return `controller ${mib(p.controller)}`;
  const runners = p.runners?.n
    ? `runners ${mib(p.runners.median)} median, ${mib(p.runners.max)} max (n=${p.runners.n})`
    : '';
  return [`tick ${mib(p.tick)}`, runners].filter(Boolean).join('; ');
}

/** Results written before the completeness check count as complete. */
const complete = (r: FleetRow) => r.requests.complete !== false;

/** Per check (the total; how many the API server refused with 429 and were tried again). */
function requests(r: FleetRow): string {
  if (!complete(r))
    return `– (audit log incomplete: ${r.checkerPods.created} checker pod creates in it for ${r.recorded} outcomes)`;
  const refused = r.requests.byCode?.['429'] ?? 0;
  return `${r.requests.perCheck.toFixed(1)} (${r.requests.total}${refused ? `, ${refused} answered 429` : ''})`;
}

function outcomes(r: FleetRow): string {
  const bad = Object.entries(r.notOk).map(([e, k]) => `${k} not OK (${cell(e)})`);
  return [`${r.ok} OK`, ...bad, ...(r.lost ? [`${r.lost} lost`] : [])].join(', ');
}

const roundOf = (r: { round?: number }) => r.round ?? 1;
/** Whether a size ran in more than one round. */
const inRounds = (rows: Array<{ checks: number; round?: number }>, n: number) =>
  new Set(rows.filter((r) => r.checks === n).map(roundOf)).size > 1;
/** Every round's ratio, in round order. */
const byRound = (xs: number[]) => xs.map((x) => `${x.toFixed(2)}×`).join(', ');
const medianOf = (xs: number[]) => `${summarize(xs).median.toFixed(2)}×`;

/**
 * khrun's figures over v3's at one size: below 1, khrun's is smaller (took less time, sent fewer requests).
 * Each ratio pairs the two rows of one round; with several rounds, every round's and their median.
 */
function ratios(rows: FleetRow[]): string[] {
  const sizes = [...new Set(rows.map((r) => r.checks))];
  return sizes.flatMap((n) => {
    const rounds = [...new Set(rows.filter((r) => r.checks === n).map(roundOf))].sort((a, b) => a - b);
    const pairs = rounds.flatMap((round) => {
      const of = (system: FleetRow['system']) =>
        rows.find((r) => r.checks === n && r.system === system && roundOf(r) === round);
      const k = of('khrun');
      const v = of('v3');
      return k && v ? [{ k, v }] : [];
    });
    if (!pairs.length) return [];
    if (pairs.length === 1) {
      const { k, v } = pairs[0]!;
      const time =
        k.allRecordedMs !== undefined && v.allRecordedMs !== undefined
          ? `${(k.allRecordedMs / v.allRecordedMs).toFixed(2)}× v3's time until all were recorded`
          : 'no ratio of the time until all were recorded (a row did not record every check)';
      const perCheck =
        complete(k) && complete(v)
          ? `${(k.requests.perCheck / v.requests.perCheck).toFixed(2)}× its API requests per check; ${k.checkerPods.created} checker pods against its ${v.checkerPods.created}`
          : 'no ratio of API requests (an audit log was incomplete)';
      return [`- ${n} checks, khrun ÷ v3: ${time}, ${perCheck}.`];
    }
    const timeRatios = pairs.flatMap(({ k, v }) =>
      k.allRecordedMs !== undefined && v.allRecordedMs !== undefined
        ? [k.allRecordedMs / v.allRecordedMs]
        : [],
    );
    const untimed = pairs.length - timeRatios.length;
    const time = timeRatios.length
      ? `${byRound(timeRatios)} v3's time until all were recorded (median ${medianOf(timeRatios)}${untimed ? `; ${untimed} round(s) without every check recorded left out` : ''})`
      : 'no ratio of the time until all were recorded (no round recorded every check)';
    const requestRatios = pairs.flatMap(({ k, v }) =>
      complete(k) && complete(v) ? [k.requests.perCheck / v.requests.perCheck] : [],
    );
    const perCheck = requestRatios.length
      ? `${byRound(requestRatios)} its API requests per check (median ${medianOf(requestRatios)})`
      : 'no ratio of API requests (the audit logs were incomplete)';
    return [`- ${n} checks, khrun ÷ v3, round by round (${pairs.length} rounds): ${time}; ${perCheck}.`];
  });
}

/** Each system's time until all were recorded over the node's until all its pods ended, at each size and round. */
function overNode(rows: FleetRow[], node: NodeRow[]): string[] {
  return node.flatMap((x) => {
    if (x.allEndedMs === undefined) return [];
    const parts = rows
      .filter((r) => r.checks === x.checks && roundOf(r) === roundOf(x) && r.allRecordedMs !== undefined)
      .map((r) => `${SYSTEM[r.system]} ${((r.allRecordedMs ?? 0) / (x.allEndedMs ?? 1)).toFixed(2)}×`);
    const which = inRounds(node, x.checks) ? ` (round ${roundOf(x)})` : '';
    return parts.length
      ? [`- ${x.checks} checks${which}, all recorded ÷ the node alone's all ended: ${parts.join(', ')}.`]
      : [];
  });
}

function nodeTable(f: Fleet): string[] {
  const node = f.node ?? [];
  if (!node.length) return [];
  return [
    '',
    '#### The node alone: the floor under both',
    '',
    f.nodeHow ?? '',
    '',
    '| checks | all pods ended | pod create to start | pods created a second | load average before → after |',
    '|---:|---:|---:|---:|---|',
    ...node.map(
      (x) =>
        `| ${x.checks}${inRounds(node, x.checks) ? ` (round ${roundOf(x)})` : ''} | ${x.allEndedMs === undefined ? `${x.ended} of ${x.checks}` : fmtMs(x.allEndedMs)} | ${spread(x.podCreateToStartMs)} | ${x.podCreatesPerSecond === undefined ? '–' : x.podCreatesPerSecond.toFixed(1)} | ${x.loadAverage.before.join(' / ')} → ${x.loadAverage.after.join(' / ')} |`,
    ),
    '',
    ...overNode(f.rows, node),
  ];
}

/** Results measured before the node row existed have none. */
type Fleet = Omit<FleetBesideV3, 'node' | 'nodeHow'> & Partial<Pick<FleetBesideV3, 'node' | 'nodeHow'>>;

/** The fleet beside v3; [] when results.json has none. */
export function fleetBesideV3Markdown(r: { fleetBesideV3?: Fleet; meta?: Meta }): string[] {
  const f = r.fleetBesideV3;
  if (!f?.rows?.length) return [];
  return [
    '### A fleet beside Kuberhealthy v3: checks due at once',
    '',
    `${f.how} ${measuredLine(r.meta, 'fleet')}`,
    '',
    '| checks | system | all recorded | lost / outcomes | tick (spawn to exit) | API requests per check (total) | checker pods created (deleted) | checker pod create to start | peak memory | load average before → after |',
    '|---:|---|---:|---|---:|---:|---:|---:|---|---|',
    ...f.rows.map(
      (x) =>
        `| ${x.checks}${inRounds(f.rows, x.checks) ? ` (round ${roundOf(x)})` : ''} | ${SYSTEM[x.system]} | ${recorded(x)} | ${outcomes(x)} | ${x.tickMs === undefined ? '–' : fmtMs(x.tickMs)} | ${requests(x)} | ${complete(x) ? `${x.checkerPods.created} (${x.checkerPods.deleted})` : '–'} | ${spread(x.podCreateToStartMs)} | ${memory(x)} | ${x.loadAverage.before.join(' / ')} → ${x.loadAverage.after.join(' / ')} |`,
    ),
    '',
    ...ratios(f.rows),
    ...(f.notes?.length ? ['', ...f.notes.map((n) => `- ${n}`)] : []),
    ...nodeTable(f),
    ...cpuTable(f.rows, f.node ?? []),
    '',
  ];
}
