import { describe, expect, it } from 'vitest';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import {
  buildStatus,
  displayedUuid,
  goJson,
  normalizeLastRun,
  parseNamespaceFilter,
} from '../../lib/status/status-json.ts';

/** A khstate as khrun (or v2) leaves it after a run. */
function ran(namespace: string, name: string, spec: Partial<KhState['spec']> = {}): KhState {
  const state = newKhState(name, namespace);
  state.spec = {
    ...state.spec,
    OK: true,
    Errors: [],
    RunDuration: '29.142295647s',
    Node: 'node-1',
    LastRun: '2019-11-14T23:26:40Z',
    AuthoritativePod: 'kuberhealthy-67bf8c4686-mbl2j',
    uuid: '5f0d2765-1b2c-4d5e-8f90-a1b2c3d4e5f6',
    ...spec,
  };
  return state;
}

// What Kuberhealthy v2.7 (health.State marshalled with json.MarshalIndent(state, "", "  ")) writes for
// these khstates: field order of the Go structs, map keys sorted, LastRun at second precision, `<>&`
// escaped, no trailing newline.
const V2_GOLDEN = `{
  "OK": false,
  "Errors": [
    "deployment rollout did not finish: \\u003cnil\\u003e \\u0026 \\"stuck\\""
  ],
  "CheckDetails": {
    "kuberhealthy/deployment": {
      "OK": false,
      "Errors": [
        "deployment rollout did not finish: \\u003cnil\\u003e \\u0026 \\"stuck\\"",
        "   "
      ],
      "RunDuration": "29.142295647s",
      "Namespace": "kuberhealthy",
      "Node": "node-1",
      "LastRun": "2019-11-14T23:26:40Z",
      "AuthoritativePod": "kuberhealthy-67bf8c4686-mbl2j",
      "uuid": "5f0d2765-1b2c-4d5e-8f90-a1b2c3d4e5f6"
    },
    "kuberhealthy/dns-internal": {
      "OK": true,
      "Errors": [],
      "RunDuration": "1.5s",
      "Namespace": "kuberhealthy",
      "Node": "",
      "AuthoritativePod": "khrun-runner",
      "uuid": "11111111-1111-4111-8111-111111111111"
    }
  },
  "JobDetails": {},
  "CurrentMaster": "khrun-status-0"
}`;

describe('buildStatus: Kuberhealthy v2 status JSON', () => {
  const states = [
    ran('kuberhealthy', 'dns-internal', {
      RunDuration: '1.5s',
      Node: '',
      LastRun: null,
      AuthoritativePod: 'khrun-runner',
      uuid: '11111111-1111-4111-8111-111111111111',
    }),
    ran('kuberhealthy', 'deployment', {
      OK: false,
      Errors: ['deployment rollout did not finish: <nil> & "stuck"', '   '],
      LastRun: '2019-11-14T23:26:40.7444659Z',
    }),
    newKhState('never-ran', 'kuberhealthy'),
  ];

  it('matches what v2 writes, byte for byte', () => {
    expect(goJson(buildStatus(states, { currentMaster: 'khrun-status-0' }))).toBe(V2_GOLDEN);
  });

  it('has exactly v2’s top-level keys and per-check keys, in order, with v2’s types', () => {
    const status = JSON.parse(goJson(buildStatus(states, { currentMaster: 'm' }))) as Record<string, unknown>;
    expect(Object.keys(status)).toEqual(['OK', 'Errors', 'CheckDetails', 'JobDetails', 'CurrentMaster']);
    expect(typeof status.OK).toBe('boolean');
    expect(Array.isArray(status.Errors)).toBe(true);
    expect(status.JobDetails).toEqual({});
    expect(typeof status.CurrentMaster).toBe('string');
    const details = status.CheckDetails as Record<string, Record<string, unknown>>;
    expect(Object.keys(details)).toEqual(['kuberhealthy/deployment', 'kuberhealthy/dns-internal']);
    const deployment = details['kuberhealthy/deployment'] as Record<string, unknown>;
    expect(Object.keys(deployment)).toEqual([
      'OK',
      'Errors',
      'RunDuration',
      'Namespace',
      'Node',
      'LastRun',
      'AuthoritativePod',
      'uuid',
    ]);
    const types = Object.fromEntries(
      Object.entries(deployment).map(([k, v]) => [k, Array.isArray(v) ? 'array' : typeof v]),
    );
    expect(types).toEqual({
      OK: 'boolean',
      Errors: 'array',
      RunDuration: 'string',
      Namespace: 'string',
      Node: 'string',
      LastRun: 'string',
      AuthoritativePod: 'string',
      uuid: 'string',
    });
    // LastRun is omitted when null (omitempty on v2's *metav1.Time).
    expect(details['kuberhealthy/dns-internal']).not.toHaveProperty('LastRun');
  });

  it('hides checks that never ran (empty AuthoritativePod)', () => {
    const status = buildStatus([newKhState('fresh', 'a')], { currentMaster: 'm' });
    expect(status.CheckDetails).toEqual({});
    expect(status.OK).toBe(true);
  });

  it('computes the global OK from non-blank errors only, not from the stored OK flags', () => {
    const okFlagWithError = ran('a', 'x', { OK: true, Errors: ['reported OK with an error'] });
    const notOkWithoutError = ran('a', 'y', { OK: false, Errors: ['', ' \t'] });
    expect(buildStatus([notOkWithoutError], { currentMaster: 'm' })).toMatchObject({ OK: true, Errors: [] });
    const both = buildStatus([okFlagWithError, notOkWithoutError], { currentMaster: 'm' });
    expect(both).toMatchObject({ OK: false, Errors: ['reported OK with an error'] });
    expect(both.CheckDetails['a/x']?.OK).toBe(true);
    expect(both.CheckDetails['a/y']).toMatchObject({ OK: false, Errors: ['', ' \t'] });
  });

  it.each([
    { query: null, keys: ['a/one', 'b/two', 'c/three'] },
    { query: '', keys: ['a/one', 'b/two', 'c/three'] },
    { query: ',', keys: ['a/one', 'b/two', 'c/three'] },
    { query: 'a', keys: ['a/one'] },
    { query: 'a,c', keys: ['a/one', 'c/three'] },
    { query: ',b,,', keys: ['b/two'] },
    { query: 'nope', keys: [] },
  ])('filters ?namespace=$query on spec.Namespace', ({ query, keys }) => {
    const states = [ran('a', 'one'), ran('b', 'two', { Errors: ['b failed'] }), ran('c', 'three')];
    const status = buildStatus(states, { currentMaster: 'm', namespaces: parseNamespaceFilter(query) });
    expect(Object.keys(status.CheckDetails)).toEqual(keys);
    expect(status.OK).toBe(!keys.includes('b/two'));
  });

  it('adds Metadata only when configured', () => {
    expect(buildStatus([], { currentMaster: 'm' })).not.toHaveProperty('Metadata');
    expect(buildStatus([], { currentMaster: 'm', metadata: { cluster: 'prod-1' } }).Metadata).toEqual({
      cluster: 'prod-1',
    });
  });
});

describe('normalizeLastRun', () => {
  it.each([
    { input: '2019-11-14T23:26:40.7444659Z', output: '2019-11-14T23:26:40Z' },
    { input: '2024-03-05T10:20:30Z', output: '2024-03-05T10:20:30Z' },
    { input: '2024-03-05T12:20:30+02:00', output: '2024-03-05T10:20:30Z' },
    { input: 'not a time', output: 'not a time' },
    { input: null, output: undefined },
    { input: '', output: undefined },
  ])('$input → $output', ({ input, output }) => {
    expect(normalizeLastRun(input)).toBe(output);
  });
});

describe('displayedUuid', () => {
  const run = (uuid: string) =>
    JSON.stringify({ uuid, startedAtMs: 1, deadlineMs: 2, pod: 'p', runner: 'r', leaseUntilMs: 2 });
  const outcome = (uuid: string) =>
    JSON.stringify({ uuid, kind: 'Succeeded', startedAtMs: 0, finishedAtMs: 1, durationMs: 1 });

  it('is spec.uuid between runs', () => {
    expect(displayedUuid(ran('a', 'x', { uuid: 'u-last' }))).toBe('u-last');
  });

  it('hides the active run’s UUID (a report credential) behind the last recorded run’s', () => {
    const state = ran('a', 'x', { uuid: 'u-active' });
    state.metadata.annotations = {
      [ANNOTATION.run]: run('u-active'),
      [ANNOTATION.outcome]: outcome('u-last'),
    };
    expect(displayedUuid(state)).toBe('u-last');
    state.metadata.annotations = { [ANNOTATION.run]: run('u-active') };
    expect(displayedUuid(state)).toBe('');
  });
});

describe('goJson', () => {
  it('escapes what Go escapes and keeps the JSON equal', () => {
    const value = { t: '</script><b>&amp;\u2028\u2029 ü 😀 "q" \\ \n' };
    const text = goJson(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(text).toContain('\\u003c/script\\u003e');
    expect(JSON.parse(text)).toEqual(value);
  });
});
