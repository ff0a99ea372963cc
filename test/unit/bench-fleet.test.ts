import { describe, expect, it } from 'vitest';
import { cpuTable, restOf } from '../bench/fleet-cpu-readme.ts';
import { rowFigures } from '../bench/fleet-v3-figures.ts';
import { fleetBesideV3Markdown } from '../bench/fleet-v3-readme.ts';
import type { AuditRequest } from '../bench/kh-audit.ts';
import { actorFigure } from '../bench/kh-figures.ts';
import { kuberhealthyMarkdown } from '../bench/kh-readme.ts';
import { busyOfProcStat, type RowCpu } from '../bench/row-cpu.ts';

const req = (atMs: number, over: Partial<AuditRequest> = {}): AuditRequest => ({
  atMs,
  user: 'runner',
  verb: 'get',
  resource: 'khstates',
  namespace: 'a',
  name: 'c0',
  code: 200,
  ...over,
});

describe("a fleet row's figures", () => {
  const base = {
    system: 'khrun' as const,
    n: 3,
    t0: 1_000,
    recordedAtMs: 9_000,
    endMs: 10_000,
    endedBy: 'all recorded' as const,
    namespaces: new Set(['a']),
    users: ['tick', 'runner'],
    podCreator: 'runner',
    memory: { tickMiB: 90, runnersMiB: [100, 110] },
    tickMs: 2_000,
    runnerJobs: 1,
    loadAverage: { before: [1, 2, 3], after: [2, 3, 4] },
  };

  it('times every check from time zero, counts pods created (201 only) and requests by code in the window', () => {
    const row = rowFigures({
      ...base,
      recorded: new Map([
        ['a/c0', { atMs: 4_000, ok: true }],
        ['a/c1', { atMs: 6_000, ok: true }],
        ['a/c2', { atMs: 8_000, ok: false, error: 'timed out waiting' }],
      ]),
      requests: [
        req(-500), // before the window (t0 - 1 s): left out
        req(1_500, { user: 'tick', verb: 'create' }),
        req(2_000, { verb: 'create', resource: 'pods', name: 'c0-x', code: 201 }),
        req(2_100, { verb: 'create', resource: 'pods', name: 'c1-x', code: 201 }),
        req(2_200, { verb: 'create', resource: 'pods', name: 'c2-x', code: 429 }),
        req(2_300, { verb: 'create', resource: 'pods', name: 'c2-x', code: 201 }),
        req(2_400, { verb: 'create', resource: 'pods', name: 'o', namespace: 'other', code: 201 }),
        req(3_000, { user: 'someone else' }),
        req(11_000), // after the window
      ],
      processes: [
        { pod: 'a/c0-x', container: 'main', uid: '1', startedAtMs: 2_500, finishedAtMs: 3_000 },
        { pod: 'a/c1-x', container: 'main', uid: '2', startedAtMs: 3_100, finishedAtMs: 3_500 },
      ],
    });
    expect(row.allRecordedMs).toBe(7_000);
    expect(row.recordedMs.median).toBe(5_000);
    expect([row.recorded, row.ok, row.lost]).toEqual([3, 2, 0]);
    expect(row.notOk).toEqual({ 'timed out waiting': 1 });
    expect(row.requests.total).toBe(6);
    expect(row.requests.perCheck).toBe(2);
    expect(row.requests.byCode).toEqual({ '200': 1, '201': 4, '429': 1 });
    expect(row.checkerPods).toEqual({ created: 3, deleted: 0, perCheck: 1 });
    expect(row.requests.complete).toBe(true);
    expect(row.podCreateToStartMs.median).toBe(750);
    expect(row.peakRssMiB.runners?.max).toBe(110);
  });

  it('leaves the time until all were recorded out when a check has none, and counts it lost', () => {
    const row = rowFigures({
      ...base,
      recorded: new Map([['a/c0', { atMs: 4_000, ok: true }]]),
      requests: [],
      processes: [],
    });
    expect(row.allRecordedMs).toBeUndefined();
    expect(row.lastRecordedMs).toBe(3_000);
    expect(row.lost).toBe(2);
  });

  it("renders each row and khrun's figures over v3's at the same size", () => {
    const row = (system: 'khrun' | 'v3', allRecordedMs: number, perCheck: number) => ({
      ...rowFigures({ ...base, system, recorded: new Map(), requests: [], processes: [] }),
      allRecordedMs,
      checks: 100,
      requests: {
        total: perCheck * 100,
        perCheck,
        byUser: {},
        byVerb: {},
        byCode: { '429': system === 'khrun' ? 7 : 0 },
        complete: true,
      },
    });
    const text = fleetBesideV3Markdown({
      fleetBesideV3: {
        how: 'how',
        notes: ['a note'],
        rows: [row('khrun', 50_000, 5), row('v3', 100_000, 15)],
      },
    }).join('\n');
    expect(text).toContain('| 100 | khrun (tick + runner Jobs) | 50.0 s |');
    expect(text).toContain('5.0 (500, 7 answered 429)');
    expect(text).toContain(
      "khrun ÷ v3: 0.50× v3's time until all were recorded, 0.33× its API requests per check",
    );
    expect(text).toContain('- a note');
    // Results from before the node row: no node table.
    expect(text).not.toContain('The node alone');
    const withNode = fleetBesideV3Markdown({
      fleetBesideV3: {
        how: 'how',
        nodeHow: 'node how',
        notes: [],
        rows: [row('khrun', 50_000, 5), row('v3', 100_000, 15)],
        node: [
          {
            checks: 100,
            allEndedMs: 40_000,
            ended: 100,
            podCreateToStartMs: { n: 100, median: 1_000, min: 10, max: 2_000, iqr: 5 },
            podCreatesPerSecond: 30,
            loadAverage: { before: [1], after: [2] },
          },
          {
            checks: 500,
            ended: 480,
            podCreateToStartMs: { n: 0, median: 0, min: 0, max: 0, iqr: 0 },
            loadAverage: { before: [1], after: [2] },
          },
        ],
      },
    }).join('\n');
    expect(withNode).toContain('| 100 | 40.0 s | 1.00 s (max 2.00 s, n=100) | 30.0 | 1 → 2 |');
    expect(withNode).toContain('| 500 | 480 of 500 |');
    expect(withNode).toContain(
      "- 100 checks, all recorded ÷ the node alone's all ended: khrun (tick + runner Jobs) 1.25×, Kuberhealthy v3.0.0 2.50×.",
    );
    expect(withNode).not.toContain('- 500 checks, all recorded');
  });

  it('pairs the rows of each round, gives every round its ratio and their median, and the node its round', () => {
    const row = (
      system: 'khrun' | 'v3',
      round: number,
      allRecordedMs: number | undefined,
      perCheck: number,
    ) => ({
      ...rowFigures({ ...base, system, recorded: new Map(), requests: [], processes: [] }),
      allRecordedMs,
      checks: 1000,
      round,
      requests: { total: perCheck * 1000, perCheck, byUser: {}, byVerb: {}, byCode: {}, complete: true },
    });
    const nodeRow = (round: number, allEndedMs: number) => ({
      checks: 1000,
      round,
      allEndedMs,
      ended: 1000,
      podCreateToStartMs: { n: 1000, median: 1_000, min: 10, max: 2_000, iqr: 5 },
      loadAverage: { before: [1], after: [2] },
    });
    const text = fleetBesideV3Markdown({
      fleetBesideV3: {
        how: 'how',
        nodeHow: 'node how',
        notes: [],
        rows: [
          row('khrun', 1, 120_000, 5),
          row('v3', 1, 200_000, 20),
          row('khrun', 2, 110_000, 6),
          row('v3', 2, 240_000, 20),
          row('khrun', 3, undefined, 5),
          row('v3', 3, 220_000, 25),
          // A round whose v3 row was left out pairs nothing.
          row('khrun', 4, 100_000, 5),
        ],
        node: [nodeRow(1, 100_000), nodeRow(2, 80_000)],
      },
    }).join('\n');
    expect(text).toContain('| 1000 (round 2) | khrun (tick + runner Jobs) | 110.0 s |');
    expect(text).toContain(
      "- 1000 checks, khrun ÷ v3, round by round (3 rounds): 0.60×, 0.46× v3's time until all were recorded (median 0.53×; 1 round(s) without every check recorded left out); 0.25×, 0.30×, 0.20× its API requests per check (median 0.25×).",
    );
    expect(text).toContain(
      "- 1000 checks (round 1), all recorded ÷ the node alone's all ended: khrun (tick + runner Jobs) 1.20×, Kuberhealthy v3.0.0 2.00×.",
    );
    expect(text).toContain(
      "- 1000 checks (round 2), all recorded ÷ the node alone's all ended: khrun (tick + runner Jobs) 1.38×, Kuberhealthy v3.0.0 3.00×.",
    );
    expect(text).toContain('| 1000 (round 2) | 80.0 s |');
  });

  it("renders where each row's CPU went, the rest being what neither the control plane nor the system used", () => {
    const cpu = (over: Partial<RowCpu> = {}): RowCpu => ({
      wallMs: 100_000,
      cores: 2,
      busy: 190,
      apiServer: 40,
      etcd: 10,
      schedulerAndControllers: 5,
      ...over,
    });
    const row = (system: 'khrun' | 'v3', round: number, c: RowCpu | undefined) => ({
      ...rowFigures({ ...base, system, recorded: new Map(), requests: [], processes: [] }),
      checks: 1000,
      round,
      allRecordedMs: 100_000,
      ...(c ? { cpu: c } : {}),
    });
    const node = (round: number, c: RowCpu, ended = true) => ({
      checks: 1000,
      round,
      ...(ended ? { allEndedMs: 100_000 } : {}),
      ended: 1000,
      podCreateToStartMs: { n: 0, median: 0, min: 0, max: 0, iqr: 0 },
      loadAverage: { before: [1], after: [2] },
      cpu: c,
    });
    const rows = [
      row('khrun', 1, cpu({ system: 35 })),
      row('v3', 1, cpu({ busy: 100, system: 20 })),
      row('khrun', 2, undefined),
    ];
    const text = cpuTable(rows, [node(1, cpu({ busy: 150 }))]).join('\n');
    expect(text).toContain(
      '| 1000 | khrun (tick and runners) | 100.0 s | 190.0 core-s (95% of 2 cores) | 40.0 core-s (21%) | 10.0 core-s (5%) | 5.0 core-s (3%) | 35.0 core-s (18%) | 100.0 core-s (53%) |',
    );
    expect(text).toContain(
      '| 1000 | Kuberhealthy v3.0.0 (controller) | 100.0 s | 100.0 core-s (50% of 2 cores) | 40.0 core-s (40%) | 10.0 core-s (10%) | 5.0 core-s (5%) | 20.0 core-s (20%) | 25.0 core-s (25%) |',
    );
    // The node alone has no system of its own; a row without figures (older results) is left out.
    expect(text).toContain(
      '| 1000 | the node alone | 100.0 s | 150.0 core-s (75% of 2 cores) | 40.0 core-s (27%) | 10.0 core-s (7%) | 5.0 core-s (3%) | – | 95.0 core-s (63%) |',
    );
    expect(text.match(/^\| 1000 /gm)).toHaveLength(3);
    expect(text).toContain(
      "- 1000 checks: khrun's row used 40.0 core-s more than the node alone's, v3's 50.0 core-s less; khrun's row's busy CPU ÷ v3's: 1.90; the node alone's ÷ v3's: 1.50.",
    );
    expect(restOf(cpu({ busy: 50, system: 10 }))).toBe(0);
    expect(cpuTable([row('khrun', 1, undefined)], [])).toEqual([]);
    // A node row cut short (not every pod ended) is shown as such and compared with nothing.
    const cut = cpuTable(rows.slice(0, 2), [node(1, cpu({ busy: 30, wallMs: 15_000 }), false)]).join('\n');
    expect(cut).toContain('| 1000 | the node alone | 15.0 s (cut short) |');
    expect(cut).not.toContain("khrun's row used");
    // user nice system idle iowait irq softirq steal guest guest_nice, in 1/100 s: idle and iowait are not busy.
    const stat =
      'cpu  100 20 30 5000 400 6 7 8 0 0\ncpu0 50 10 15 2500 200 3 3 4 0 0\ncpu1 50 10 15 2500 200 3 4 4 0 0\nintr 1';
    expect(busyOfProcStat(stat)).toEqual({ ms: 1710, cores: 2 });
    // The markdown of the section carries the table.
    expect(fleetBesideV3Markdown({ fleetBesideV3: { how: 'how', notes: [], rows } }).join('\n')).toContain(
      "#### Where the machine's CPU went in each row",
    );
  });

  it('makes no request figure from an audit log with fewer checker pod creates than outcomes', () => {
    const recorded = new Map([
      ['a/c0', { atMs: 4_000, ok: true }],
      ['a/c1', { atMs: 6_000, ok: true }],
    ]);
    const row = rowFigures({
      ...base,
      system: 'v3',
      podCreator: 'v3',
      users: ['v3'],
      recorded,
      requests: [req(2_000, { user: 'v3', verb: 'create', resource: 'pods', name: 'c0-x', code: 201 })],
      processes: [],
    });
    expect(row.requests.complete).toBe(false);
    const other = rowFigures({ ...base, recorded, requests: [], processes: [] });
    const text = fleetBesideV3Markdown({
      fleetBesideV3: {
        how: 'how',
        notes: [],
        rows: [{ ...other, requests: { ...other.requests, complete: true } }, row],
      },
    }).join('\n');
    expect(text).toContain('– (audit log incomplete: 1 checker pod creates in it for 2 outcomes) | – |');
    expect(text).toContain('no ratio of API requests (an audit log was incomplete)');
  });
});

describe("an actor's figures in the kuberhealthy section", () => {
  it('leaves the first run out, times the rest from start and from due, and counts requests per outcome in the window', () => {
    const runs = {
      'test-check': [
        { uuid: 'a', startSeenMs: 1_000, outcomeSeenMs: 1_500, ok: true },
        { uuid: 'b', startSeenMs: 16_100, outcomeSeenMs: 16_400, ok: true },
        { uuid: 'c', startSeenMs: 31_050, outcomeSeenMs: 31_300, ok: false },
      ],
      'pod-status': [],
      'exit-3': [],
    };
    const f = actorFigure({
      record: 'khstate',
      user: 'runner',
      schedule: {
        kind: 'khrun',
        fires: { 'test-check': [900, 16_000, 31_000], 'pod-status': [], 'exit-3': [] },
      },
      runs,
      namespaces: { 'test-check': 'a', 'pod-status': 'b', 'exit-3': 'c' },
      intervalMs: 15_000,
      requests: [req(1_200), req(16_200), req(16_300), req(31_100), req(40_000)],
      windowFromMs: 10_000,
      windowToMs: 35_000,
    });
    const c = f.checks['test-check'];
    expect([c.runs, c.ok]).toEqual([2, 1]);
    expect(c.startToOutcomeMs.median).toBe(275);
    expect(c.dueToOutcomeMs.median).toBe(350);
    expect(f.requests).toMatchObject({ total: 3, finishedRuns: 2, perFinishedRun: 1.5 });
  });

  it("renders both tables with khrun's median over the peer's", () => {
    const kind = (median: number) => ({
      runs: 1,
      ok: 1,
      startToOutcomeMs: { n: 1, median, min: median, max: median, iqr: 0 },
      dueToOutcomeMs: { n: 1, median: median * 2, min: median * 2, max: median * 2, iqr: 0 },
      dueUnknown: 0,
    });
    const actor = (median: number) => ({
      user: 'u',
      record: 'khstate' as const,
      checks: { 'test-check': kind(median), 'pod-status': kind(median), 'exit-3': kind(median) },
      requests: { total: 10, finishedRuns: 5, perFinishedRun: 2, byVerb: {} },
    });
    const pair = {
      complete: true,
      loadAverage: { before: [1, 1, 1], after: [2, 2, 2] },
      windowSeconds: 60,
      peer: { ...actor(1_000), rssMiB: { n: 1, median: 40, min: 40, max: 40, iqr: 0 }, peakRssMiB: 41 },
      khrun: {
        ...actor(500),
        skippedFires: 0,
        runnerPeakRssMiB: { n: 1, median: 90, min: 90, max: 90, iqr: 0 },
      },
    };
    const text = kuberhealthyMarkdown({
      kuberhealthy: {
        how: 'how',
        mode: 'full',
        times: {} as never,
        targets: {} as never,
        pairs: { v2: pair, v3: pair },
      },
    }).join('\n');
    expect(text).toContain(
      "| Kuberhealthy's test-check, reports at once | 1.00 s (1.00 s–1.00 s, n=1) | 500 ms (500 ms–500 ms, n=1) | 0.50× |",
    );
    expect(text).toContain('**End to end from the schedule**');
    expect(text).toContain('| 2.00 s (2.00 s–2.00 s, n=1) | 1.00 s (1.00 s–1.00 s, n=1) | 0.50× |');
    expect(text).toContain('load average 1 / 1 / 1 before, 2 / 2 / 2 after');
  });
});
