import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import { OutcomeKind } from '../../lib/state/outcome-kind.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { addOutcome, emptyTotals, TOTALS_ANNOTATION } from '../../lib/state/totals.ts';
import { errorLabel } from '../../lib/status/error-label.ts';
import { renderMetrics } from '../../lib/status/metrics.ts';
import { runDurationSeconds } from '../../lib/status/run-duration.ts';
import { syntheticStates } from '../fixtures/khstates.ts';
import { parsePromText, sampleValue } from '../helpers/prom-text.ts';

const NOW = Date.UTC(2024, 2, 5, 10, 30, 0);

function ran(
  namespace: string,
  name: string,
  spec: Partial<KhState['spec']> = {},
  annotations = {},
): KhState {
  const state = newKhState(name, namespace);
  state.spec = {
    ...state.spec,
    RunDuration: '1.5s',
    LastRun: '2024-03-05T10:20:30Z',
    AuthoritativePod: 'khrun-runner',
    uuid: 'u',
    ...spec,
  };
  state.metadata.annotations = annotations;
  return state;
}

const render = (states: KhState[], options = {}) =>
  renderMetrics(states, { currentMaster: 'khrun-status-0', nowMs: NOW, options });

// Error texts a check may report: quotes, backslashes (Windows paths, regexes), newlines, tabs, carriage
// returns, non-ASCII and astral characters, and text that looks like exposition syntax.
const NASTY = [
  'endpoint "https://svc:8443/healthz" answered 503',
  'C:\\Temp\\check.log: \\n is not a newline',
  'line one\nline two\r\nline three\ttabbed',
  'überlastet — 503 — 😀 — 日本語',
  'kuberhealthy_check{check="x"} 1\n# TYPE fake gauge',
  '',
];

describe('renderMetrics: v2 names and labels', () => {
  it('writes kuberhealthy_running, cluster_state, check and check_duration_seconds as v2 does', async () => {
    const text = await render([
      ran('kuberhealthy', 'ok-check'),
      ran('kuberhealthy', 'bad-check', { OK: false, Errors: ['a', 'b'], RunDuration: '22.512278967s' }),
      newKhState('never', 'kuberhealthy'),
    ]);
    const families = parsePromText(text);
    expect(families.get('kuberhealthy_running')).toMatchObject({
      type: 'gauge',
      help: 'Shows if kuberhealthy is running error free',
      samples: [{ labels: { current_master: 'khrun-status-0' }, value: 1 }],
    });
    expect(families.get('kuberhealthy_cluster_state')).toMatchObject({
      type: 'gauge',
      help: 'Shows the status of the cluster',
      samples: [{ labels: {}, value: 0 }],
    });
    expect(families.get('kuberhealthy_check')?.samples).toEqual([
      {
        name: 'kuberhealthy_check',
        labels: { check: 'kuberhealthy/bad-check', namespace: 'kuberhealthy', status: '0', error: 'a|b' },
        value: 0,
      },
      {
        name: 'kuberhealthy_check',
        labels: { check: 'kuberhealthy/ok-check', namespace: 'kuberhealthy', status: '1', error: '' },
        value: 1,
      },
    ]);
    expect(families.get('kuberhealthy_check')?.help).toBe('Shows the status of a Kuberhealthy check');
    expect(
      sampleValue(families, 'kuberhealthy_check_duration_seconds', { check: 'kuberhealthy/bad-check' }),
    ).toBeCloseTo(22.512278967, 9);
    // A check that never ran has no series (v2 hides it).
    expect(text).not.toContain('kuberhealthy/never');
  });

  it('is read the same by an independent parser (parse-prometheus-text-format)', async () => {
    const states = [ran('a', 'x', { OK: false, Errors: NASTY }), ran('b', 'y')];
    const text = await render(states);
    const theirs = parsePrometheusTextFormat(text);
    const check = theirs.find((f) => f.name === 'kuberhealthy_check');
    expect(check?.type).toBe('GAUGE');
    expect(check?.metrics.map((m) => m.labels)).toEqual([
      { check: 'a/x', namespace: 'a', status: '0', error: NASTY.join('|') },
      { check: 'b/y', namespace: 'b', status: '1', error: '' },
    ]);
    const types = Object.fromEntries(theirs.map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      kuberhealthy_running: 'GAUGE',
      kuberhealthy_cluster_state: 'GAUGE',
      kuberhealthy_check_duration_seconds: 'GAUGE',
      kuberhealthy_check_consecutive_failures: 'GAUGE',
      kuberhealthy_check_success_total: 'COUNTER',
      kuberhealthy_check_failure_total: 'COUNTER',
      kuberhealthy_check_run_duration_seconds: 'HISTOGRAM',
    });
  });
});

describe('renderMetrics: the error label', () => {
  it.each(NASTY.filter(Boolean))('round-trips %j exactly', async (error) => {
    const text = await render([ran('a', 'x', { OK: false, Errors: [error] })]);
    // Every sample stays on one line: a raw newline in a label would split it.
    const lines = text.split('\n').filter((l) => l.startsWith('kuberhealthy_check{'));
    expect(lines).toHaveLength(1);
    expect(sampleValue(parsePromText(text), 'kuberhealthy_check', { error })).toBe(0);
  });

  it('drops the label when suppressed (v2 suppressErrorLabel)', async () => {
    const text = await render([ran('a', 'x', { OK: false, Errors: ['boom'] })], { suppressErrorLabel: true });
    expect(parsePromText(text).get('kuberhealthy_check')?.samples[0]?.labels).toEqual({
      check: 'a/x',
      namespace: 'a',
      status: '0',
    });
  });

  it.each([
    { errors: ['abcdef'], max: 4, label: 'abcd' },
    { errors: ['ab', 'cd'], max: 4, label: 'ab|c' },
    { errors: ['ü😀x'], max: 5, label: 'ü' },
    { errors: ['ü😀x'], max: 6, label: 'ü😀' },
    { errors: ['short'], max: 100, label: 'short' },
    { errors: ['abc'], max: 0, label: 'abc' },
  ])('truncates $errors to $max bytes without splitting a character', ({ errors, max, label }) => {
    expect(errorLabel(errors, { errorLabelMaxBytes: max })).toBe(label);
    expect(Buffer.byteLength(errorLabel(errors, { errorLabelMaxBytes: max }))).toBeLessThanOrEqual(
      max || 1e9,
    );
  });
});

describe('renderMetrics: v3-style series from khstate annotations', () => {
  const totals = [
    { kind: 'Succeeded', durationMs: 800 },
    { kind: 'Succeeded', durationMs: 4_000 },
    { kind: 'Failed', durationMs: 12_000 },
    { kind: 'TimedOut', durationMs: 300_000 },
    { kind: 'ExecutionError', durationMs: 0 },
    { kind: 'Skipped', durationMs: 9_999_000 },
    { kind: 'Succeeded', durationMs: 400_000 },
  ].reduce(
    (t, o, i) =>
      addOutcome(t, {
        ...(o as { kind: 'Succeeded'; durationMs: number }),
        atMs: NOW - (7 - i) * 60_000,
        runIntervalMs: 600_000,
      }),
    emptyTotals(),
  );
  const state = ran(
    'a',
    'x',
    { OK: false, Errors: ['down'] },
    {
      [TOTALS_ANNOTATION]: JSON.stringify(totals),
      [ANNOTATION.consecutiveFailures]: '4',
    },
  );

  it('exposes counters, consecutive failures, seconds since success, interval and a cumulative histogram', async () => {
    const families = parsePromText(await render([state]));
    const labels = { check: 'a/x', namespace: 'a' };
    expect(sampleValue(families, 'kuberhealthy_check_consecutive_failures', labels)).toBe(4);
    expect(sampleValue(families, 'kuberhealthy_check_success_total', labels)).toBe(3);
    expect(sampleValue(families, 'kuberhealthy_check_failure_total', labels)).toBe(3);
    expect(
      sampleValue(families, 'kuberhealthy_check_outcomes_total', { ...labels, outcome: 'Skipped' }),
    ).toBe(1);
    expect(sampleValue(families, 'kuberhealthy_check_seconds_since_success', labels)).toBe(60);
    expect(sampleValue(families, 'kuberhealthy_check_run_interval_seconds', labels)).toBe(600);
    expect(sampleValue(families, 'kuberhealthy_check_last_run_timestamp_seconds', labels)).toBe(
      Date.UTC(2024, 2, 5, 10, 20, 30) / 1000,
    );
    const bucket = (le: string) =>
      sampleValue(families, 'kuberhealthy_check_run_duration_seconds_bucket', { ...labels, le });
    expect(['1', '5', '10', '30', '60', '120', '300', '+Inf'].map(bucket)).toEqual([2, 3, 3, 4, 4, 4, 5, 6]);
    expect(sampleValue(families, 'kuberhealthy_check_run_duration_seconds_count', labels)).toBe(6);
    expect(sampleValue(families, 'kuberhealthy_check_run_duration_seconds_sum', labels)).toBeCloseTo(
      716.8,
      6,
    );
  });

  it('exposes the timeout and the last dispatch, from which overdue and undispatched checks are judged', async () => {
    const recorded = addOutcome(emptyTotals(), {
      kind: OutcomeKind.Succeeded,
      durationMs: 1_000,
      atMs: NOW - 60_000,
      runIntervalMs: 300_000,
      timeoutMs: 90_000,
    });
    const dispatched = ran(
      'a',
      'x',
      {},
      {
        [TOTALS_ANNOTATION]: JSON.stringify(recorded),
        [ANNOTATION.dispatch]: JSON.stringify({ atMs: NOW - 65_000, ref: 'khrun-run-x-1', by: 'tick-1' }),
      },
    );
    const families = parsePromText(await render([dispatched, ran('a', 'manual')]));
    const labels = { check: 'a/x', namespace: 'a' };
    expect(sampleValue(families, 'kuberhealthy_check_timeout_seconds', labels)).toBe(90);
    expect(sampleValue(families, 'kuberhealthy_check_last_dispatch_timestamp_seconds', labels)).toBe(
      (NOW - 65_000) / 1000,
    );
    // A check run by hand, or recorded by a khrun before the timeout was kept: no series, not a made-up one.
    for (const name of [
      'kuberhealthy_check_timeout_seconds',
      'kuberhealthy_check_last_dispatch_timestamp_seconds',
    ])
      expect(families.get(name)?.samples.map((x) => x.labels.check)).toEqual(['a/x']);
  });

  it('leaves seconds_since_success out for a check that never succeeded', async () => {
    const families = parsePromText(await render([ran('a', 'x', { OK: false, Errors: ['down'] })]));
    expect(families.get('kuberhealthy_check_seconds_since_success')?.samples).toEqual([]);
    expect(sampleValue(families, 'kuberhealthy_check_success_total', { check: 'a/x' })).toBe(0);
  });

  it('takes the last success from LastRun for a passing khstate without totals (written by v2)', async () => {
    const families = parsePromText(await render([ran('a', 'x')]));
    expect(sampleValue(families, 'kuberhealthy_check_seconds_since_success', { check: 'a/x' })).toBe(570);
  });
});

describe('renderMetrics: scale', () => {
  it('renders 500 checks as a valid exposition with one series per check per family', async () => {
    const states = syntheticStates(500, NOW);
    const families = parsePromText(await render(states));
    const visible = states.filter((s) => s.spec.AuthoritativePod !== '').length;
    expect(families.get('kuberhealthy_check')?.samples).toHaveLength(visible);
    expect(families.get('kuberhealthy_check_run_duration_seconds')?.samples).toHaveLength(visible * 10);
  });
});

describe('runDurationSeconds', () => {
  it.each([
    { text: '1.5s', seconds: 1.5 },
    { text: '5m0.005s', seconds: 300.005 },
    { text: '', seconds: 0 },
    { text: 'garbage', seconds: 0 },
    { text: '-1s', seconds: -1 },
  ])('$text → $seconds', ({ text, seconds }) => {
    expect(runDurationSeconds(text)).toBeCloseTo(seconds, 9);
  });
});
