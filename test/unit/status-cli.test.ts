import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { renderDescribe, runTimeline } from '../../lib/commands/describe.ts';
import {
  renderStatusTable,
  type StatusRow,
  statusColumnWidths,
  statusRows,
} from '../../lib/commands/status.ts';
import { statusChanges, watchEventJson, watchTableLine } from '../../lib/commands/status-watch.ts';
import {
  formatTable,
  humanDuration,
  shortDuration,
  stripAnsi,
  visibleWidth,
} from '../../lib/commands/table.ts';
import { appendHistory, HISTORY_ANNOTATION } from '../../lib/state/history.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';

const NOW = Date.UTC(2024, 2, 5, 10, 30, 0);
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for the escape character itself
const ESC = /\u001b/;

const check = (namespace: string, name: string): KhCheck => ({
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name, namespace, uid: `uid-${name}` },
  spec: {
    runInterval: '10m',
    timeout: '5m',
    podSpec: { containers: [{ name: 'main', image: 'example/dns:1' }] },
  },
});

function ran(
  namespace: string,
  name: string,
  spec: Partial<KhState['spec']>,
  annotations: Record<string, string> = {},
) {
  const state = newKhState(name, namespace);
  state.spec = { ...state.spec, AuthoritativePod: 'khrun-runner', Node: 'node-1', ...spec };
  state.metadata.annotations = annotations;
  return state;
}

const checks = [check('kuberhealthy', 'dns'), check('kuberhealthy', 'deployment'), check('team-a', 'fresh')];
const states = [
  ran('kuberhealthy', 'dns', { OK: true, RunDuration: '1.503s', LastRun: '2024-03-05T10:25:00Z' }),
  ran(
    'kuberhealthy',
    'deployment',
    {
      OK: false,
      Errors: ['rollout stuck:\n  3/4 replicas ready', 'second'],
      RunDuration: '5m0.005s',
      LastRun: '2024-03-05T08:00:00Z',
    },
    { [ANNOTATION.consecutiveFailures]: '3' },
  ),
  ran('team-b', 'orphan', { OK: true, RunDuration: '2s', LastRun: '2024-03-05T10:29:50Z' }),
];

describe('khrun status table', () => {
  const rows = statusRows(checks, states);

  it('prints plain aligned columns when piped', () => {
    expect(renderStatusTable(rows, { nowMs: NOW, color: false, wide: false })).toBe(
      [
        'CHECK                 NAMESPACE      OK      LAST RUN   DURATION   FAILURES   ERROR',
        'deployment            kuberhealthy   false   150m       5m         3          rollout stuck: 3/4 replicas ready',
        'dns                   kuberhealthy   true    5m         1.5s       0',
        'fresh                 team-a         -       <never>    -          0',
        'orphan (no khcheck)   team-b         true    10s        2s         0',
      ].join('\n'),
    );
  });

  it('colors OK, failures and errors on a terminal, keeping the same layout', () => {
    const colored = renderStatusTable(rows, { nowMs: NOW, color: true, wide: false });
    expect(colored).toMatch(ESC);
    expect(colored).toContain('\u001b[31mfalse\u001b[0m');
    expect(colored).toContain('\u001b[32mtrue\u001b[0m');
    const plain = renderStatusTable(rows, { nowMs: NOW, color: false, wide: false });
    expect(stripAnsi(colored)).toBe(plain);
  });

  it('adds outcome, node and the run in progress with -o wide', () => {
    const wide = renderStatusTable(rows, { nowMs: NOW, color: false, wide: true }).split('\n');
    expect(wide[0]).toBe(
      'CHECK                 NAMESPACE      OK      LAST RUN   DURATION   FAILURES   OUTCOME   NODE     RUNNING   UPTIME(24H/7D/30D)   ALERTS   ERROR',
    );
    expect(wide[1]).toContain('node-1');
    expect(wide.join('\n')).not.toMatch(ESC);
  });

  it('says so when there are no checks', () => {
    expect(renderStatusTable([], { nowMs: NOW, color: false, wide: false })).toBe('No checks found.');
  });

  it('cuts long errors to 80 characters, but not with -o wide', () => {
    const long = statusRows(
      [],
      [ran('a', 'x', { OK: false, Errors: ['e'.repeat(200)], LastRun: '2024-03-05T10:29:00Z' })],
    );
    const line = renderStatusTable(long, { nowMs: NOW, color: false, wide: false }).split('\n')[1] ?? '';
    expect(line.endsWith(`${'e'.repeat(79)}…`)).toBe(true);
    expect(renderStatusTable(long, { nowMs: NOW, color: false, wide: true })).toContain('e'.repeat(200));
  });
});

describe('khrun status --watch: one line per changed check, as kubectl get -w', () => {
  const before = statusRows(checks, states);
  const byKey = (rows: readonly StatusRow[]) => new Map(rows.map((r) => [`${r.namespace}/${r.name}`, r]));
  const failing = ran(
    'kuberhealthy',
    'dns',
    { OK: false, Errors: ['boom\nagain'], RunDuration: '2s', LastRun: '2024-03-05T10:29:00Z' },
    { [ANNOTATION.consecutiveFailures]: '1' },
  );
  // A run claimed on deployment: only -o wide shows it (RUNNING); a lease renewal changes nothing shown.
  const claimed = structuredClone(states[1]!);
  claimed.metadata.annotations = {
    ...claimed.metadata.annotations,
    [ANNOTATION.run]: JSON.stringify({
      uuid: '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
      startedAtMs: NOW - 5_000,
      deadlineMs: NOW + 60_000,
      pod: 'deployment-1',
      runner: 'khrun-x',
      leaseUntilMs: NOW + 30_000,
    }),
  };

  it('reports a changed result, and nothing for a write that changes nothing shown', () => {
    const after = statusRows(checks, [failing, claimed, states[2]!]);
    expect(statusChanges(byKey(before), after, false)).toEqual([
      {
        type: 'MODIFIED',
        row: expect.objectContaining({ name: 'dns', ok: false, firstError: 'boom\nagain' }),
      },
    ]);
    expect(statusChanges(byKey(before), after, true).map((c) => [c.type, c.row.name])).toEqual([
      ['MODIFIED', 'deployment'],
      ['MODIFIED', 'dns'],
    ]);
    expect(statusChanges(byKey(before), before, true)).toEqual([]);
  });

  it('reports khstates that appear and disappear', () => {
    const fresh = ran('team-c', 'new', { OK: true, RunDuration: '1s', LastRun: '2024-03-05T10:29:59Z' });
    const after = statusRows(checks, [states[0]!, states[1]!, fresh]);
    expect(statusChanges(byKey(before), after, false).map((c) => [c.type, c.row.name])).toEqual([
      ['DELETED', 'orphan'],
      ['ADDED', 'new'],
    ]);
  });

  it('prints a change in the columns of the table printed first, without the header', () => {
    const widths = statusColumnWidths(before, { nowMs: NOW, wide: false });
    const row = statusRows(checks, [failing]).find((r) => r.name === 'dns')!;
    expect(watchTableLine(row, { nowMs: NOW, color: false, wide: false, widths })).toBe(
      'dns                   kuberhealthy   false   60s        2s         1          boom again',
    );
  });

  it('-o json: one object per change, on one line', () => {
    const row = statusRows(checks, [failing]).find((r) => r.name === 'dns')!;
    const json = watchEventJson({ type: 'MODIFIED', row });
    expect(json).not.toContain('\n ');
    expect(JSON.parse(json)).toEqual({
      type: 'MODIFIED',
      check: 'kuberhealthy/dns',
      namespace: 'kuberhealthy',
      name: 'dns',
      hasRun: true,
      ok: false,
      lastRun: '2024-03-05T10:29:00.000Z',
      durationMs: 2_000,
      consecutiveFailures: 1,
      error: 'boom\nagain',
      outcome: '',
      node: 'node-1',
      runningSince: null,
      orphan: false,
    });
  });
});

describe('table helpers', () => {
  it.each([
    [0, '0s'],
    [-1_500, '0s'],
    [-3_000, '<invalid>'],
    [119_000, '119s'],
    [125_000, '2m5s'],
    [600_000, '10m'],
    [179 * 60_000, '179m'],
    [3 * 3_600_000 + 5 * 60_000, '3h5m'],
    [8 * 3_600_000, '8h'],
    [47 * 3_600_000, '47h'],
    [3 * 86_400_000 + 5 * 3_600_000, '3d5h'],
    [300 * 86_400_000, '300d'],
    [(2 * 365 + 30) * 86_400_000, '2y30d'],
    [10 * 365 * 86_400_000, '10y'],
  ])('humanDuration(%i) = %s (kubectl’s ages)', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });

  it.each([
    [850, '850ms'],
    [1_503, '1.5s'],
    [61_000, '1m1s'],
    [300_005, '5m'],
    [3_720_000, '1h2m'],
  ])('shortDuration(%i) = %s', (ms, text) => {
    expect(shortDuration(ms)).toBe(text);
  });

  it('aligns by visible width, ignoring color codes and counting code points', () => {
    expect(visibleWidth('\u001b[31mü😀\u001b[0m')).toBe(2);
    expect(
      formatTable([
        ['A', 'B'],
        ['\u001b[32mok\u001b[0m', 'x'],
      ]),
    ).toBe('A    B\n\u001b[32mok\u001b[0m   x');
  });
});

describe('khrun describe', () => {
  const uuid = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
  const started = Date.UTC(2024, 2, 5, 10, 25, 0);
  let history: string | undefined;
  history = appendHistory(history, { atMs: NOW - 600_000, kind: 'Succeeded', ok: true, durationMs: 1_200 });
  history = appendHistory(history, {
    atMs: started + 2_500,
    kind: 'Failed',
    ok: false,
    durationMs: 2_500,
    error: 'disk full\non /data',
  });
  const state = ran(
    'checks',
    'dns',
    {
      OK: false,
      Errors: ['disk full\non /data'],
      RunDuration: '2.5s',
      LastRun: '2024-03-05T10:25:02Z',
      uuid,
    },
    {
      [ANNOTATION.consecutiveFailures]: '1',
      [ANNOTATION.outcome]: JSON.stringify({
        uuid,
        kind: 'Failed',
        startedAtMs: started,
        finishedAtMs: started + 2_600,
        durationMs: 2_500,
      }),
      [ANNOTATION.report]: JSON.stringify({
        uuid,
        atMs: started + 2_500,
        ok: false,
        errors: ['disk full'],
        pod: 'dns-1',
      }),
      [HISTORY_ANNOTATION]: history,
    },
  );
  const pod: V1Pod = {
    metadata: {
      name: 'dns-1709634300',
      labels: { 'kuberhealthy-run-id': uuid },
      creationTimestamp: new Date(started + 100),
    },
    spec: { nodeName: 'node-1', containers: [] },
    status: {
      phase: 'Succeeded',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(started + 200) }],
      containerStatuses: [
        {
          name: 'main',
          image: 'i',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: {
            terminated: {
              exitCode: 0,
              reason: 'Completed',
              startedAt: new Date(started + 900),
              finishedAt: new Date(started + 2_700),
            },
          },
        },
      ],
    },
  };
  const event: CoreV1Event = {
    metadata: { name: 'dns.1' },
    involvedObject: {},
    type: 'Warning',
    reason: 'CheckFailed',
    message: 'run 6f1c2a7e failed after 2.5s: disk full',
    source: { component: 'khrun' },
    lastTimestamp: new Date(started + 2_600),
  };
  const view = {
    name: 'dns',
    namespace: 'checks',
    check: check('checks', 'dns'),
    state,
    pods: [pod],
    events: [event],
  };

  it('orders the last run’s moments in a timeline from the claim', () => {
    expect(runTimeline(view)).toEqual({
      title: 'last run 6f1c2a7e, pod dns-1709634300 (Succeeded)',
      lines: [
        [started, 'claimed'],
        [started + 100, 'pod dns-1709634300 created'],
        [started + 200, 'scheduled on node-1'],
        [started + 900, 'container main started'],
        [started + 2_500, 'report accepted: not OK'],
        [started + 2_600, 'recorded: Failed'],
        [started + 2_700, 'container main exited 0 (Completed)'],
      ],
    });
  });

  it('prints the check, status, errors, run, history and events', () => {
    const text = renderDescribe(view, { nowMs: NOW, color: false });
    expect(text).not.toMatch(ESC);
    expect(text.split('\n')).toEqual([
      'Name:          dns',
      'Namespace:     checks',
      'Run Interval:  10m',
      'Timeout:       5m',
      'Containers:    main (example/dns:1)',
      'Status:        FAILING (1 consecutive failures)',
      'Last Run:      2024-03-05T10:25:02Z (4m58s ago), took 2.5s, on node-1, by khrun-runner',
      'Last Outcome:  Failed',
      'Totals:        0 succeeded, 0 failed, 0 timed out, 0 execution errors, 0 skipped',
      'Errors:',
      '  - disk full',
      '    on /data',
      'Run:           last run 6f1c2a7e, pod dns-1709634300 (Succeeded)',
      '  +0ms     claimed',
      '  +100ms   pod dns-1709634300 created',
      '  +200ms   scheduled on node-1',
      '  +900ms   container main started',
      '  +2.5s    report accepted: not OK',
      '  +2.6s    recorded: Failed',
      '  +2.7s    container main exited 0 (Completed)',
      'History (newest first):',
      '  AGE     OUTCOME     DURATION   ERROR',
      '  4m57s   Failed      2.5s       disk full on /data',
      '  10m     Succeeded   1.2s',
      'Events:',
      '  TYPE      REASON        AGE     FROM    MESSAGE',
      '  Warning   CheckFailed   4m57s   khrun   run 6f1c2a7e failed after 2.5s: disk full',
    ]);
  });

  it('describes a khstate without khcheck and a check that never ran', () => {
    const orphan = renderDescribe({ ...view, check: null }, { nowMs: NOW, color: false });
    expect(orphan).toContain('KHCheck:       <none>: this khstate has no khcheck');
    const fresh = renderDescribe(
      { name: 'x', namespace: 'y', check: check('y', 'x'), state: null, pods: [], events: [] },
      { nowMs: NOW, color: false },
    );
    expect(fresh).toContain('Status:        never run');
    expect(fresh).toContain('History:       <none>');
    expect(fresh).toContain('Events:        <none>');
  });
});
