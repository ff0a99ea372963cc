import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { quantityValue } from '../../lib/check/pod-sanity.ts';
import { convertCommand } from '../../lib/commands/convert.ts';
import { validateCommand } from '../../lib/commands/validate.ts';

// `khrun validate`: offline, the runner's own validation plus pod-spec sanity, each problem named by file,
// document, object and field; exit 1 when any check is invalid. Table cases, then every Kuberhealthy
// manifest vendored in test/fixtures, which must validate clean, as they run on Kuberhealthy itself.

const FIXTURES = resolve(import.meta.dirname, '../fixtures/kuberhealthy');

async function validate(files: Record<string, string>, output: 'text' | 'json' = 'json') {
  const out: string[] = [];
  const err: string[] = [];
  const code = await validateCommand({
    files: Object.keys(files),
    output,
    readInput: async (p) => {
      const text = files[p];
      if (text === undefined) throw new Error(`ENOENT: no such file, open '${p}'`);
      return text;
    },
    write: (l) => out.push(l),
    warn: (l) => err.push(l),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const khcheck = (podSpec: string, extra = '') => `apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: {name: ping, namespace: checks}
spec:
  runInterval: 1m
  timeout: 2m${extra}
  podSpec: ${podSpec}
`;

const ok = "{containers: [{name: main, image: 'node:20-alpine'}]}";

type Problem = { severity: string; field?: string; message: string };

describe('one khcheck', () => {
  it.each<[string, string, Problem[]]>([
    ['valid', khcheck(ok), []],
    [
      'a container without an image',
      khcheck('{containers: [{name: main}]}'),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].image',
          message: expect.stringMatching(/^is missing;/),
        },
      ],
    ],
    [
      'imagePullPolicy: Alwayz',
      khcheck('{containers: [{name: main, image: x, imagePullPolicy: Alwayz}]}'),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].imagePullPolicy',
          message: '"Alwayz" is not a pull policy; use one of Always, IfNotPresent, Never (or leave it out)',
        },
      ],
    ],
    [
      'a restartPolicy no pod can have',
      khcheck('{restartPolicy: Sometimes, containers: [{name: main, image: x}]}'),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.restartPolicy',
          message: expect.stringMatching(/^"Sometimes" is not a restart policy/),
        },
      ],
    ],
    [
      'restartPolicy Always: no problem, khrun runs the checker pod with Never',
      khcheck('{restartPolicy: Always, containers: [{name: main, image: x}]}'),
      [],
    ],
    [
      'duplicate container names, across init containers too',
      khcheck('{initContainers: [{name: main, image: x}], containers: [{name: main, image: y}]}'),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.initContainers[0].name',
          message: expect.stringMatching(/^"main" is also the name of spec\.podSpec\.containers\[0\]/),
        },
      ],
    ],
    [
      'a bad quantity, and a request above its limit',
      khcheck(
        '{containers: [{name: main, image: x, resources: {limits: {cpu: 100m, memory: 1 Gi}, requests: {cpu: "1"}}}]}',
      ),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].resources.limits.memory',
          message: expect.stringMatching(/^"1 Gi" is not a quantity/),
        },
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].resources.requests.cpu',
          message: expect.stringMatching(/^is more than limits\.cpu/),
        },
      ],
    ],
    [
      'env names Kubernetes refuses, a name twice, value and valueFrom together',
      khcheck(
        '{containers: [{name: main, image: x, env: [{name: 1BAD, value: a}, {name: OK, value: b}, {name: OK, value: c}, {name: B, value: d, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}]}',
      ),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].env[0].name',
          message: expect.stringMatching(/^"1BAD" is not a variable name/),
        },
        {
          severity: 'warning',
          field: 'spec.podSpec.containers[0].env[2].name',
          message: expect.stringMatching(/^"OK" is set twice/),
        },
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].env[3]',
          message: expect.stringMatching(/^has both value and valueFrom/),
        },
      ],
    ],
    [
      'command that is not a list, a container name that is not a DNS label',
      khcheck("{containers: [{name: Main_1, image: x, command: 'node check.js'}]}"),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].name',
          message: expect.stringMatching(/is not a DNS label/),
        },
        {
          severity: 'error',
          field: 'spec.podSpec.containers[0].command',
          message: expect.stringMatching(/^is not a list of strings/),
        },
      ],
    ],
    [
      "the runner's own validation: a duration Go cannot parse",
      khcheck(ok).replace('timeout: 2m', 'timeout: 5 min'),
      [
        {
          severity: 'error',
          field: 'spec.timeout',
          message: expect.stringMatching(/^"5 min" is not a Go duration/),
        },
      ],
    ],
    [
      'no containers (the runner would say so too, without the field)',
      khcheck('{containers: []}'),
      [
        {
          severity: 'error',
          field: 'spec.podSpec.containers',
          message:
            'is missing or empty; give at least one container in the list: containers: [{name: check, image: ...}]',
        },
      ],
    ],
    [
      "the runner's own validation: label maps",
      khcheck(ok, '\n  extraLabels: {team: [a]}'),
      [
        {
          severity: 'error',
          field: 'spec.extraLabels',
          message: expect.stringMatching(/^must be a map of string keys/),
        },
      ],
    ],
    [
      'a name the checker pod label cannot hold',
      khcheck(ok).replace('name: ping', `name: ${'a'.repeat(64)}`),
      [{ severity: 'error', field: 'metadata.name', message: expect.stringMatching(/^is 64 characters/) }],
    ],
  ])('%s', async (_, yaml, problems) => {
    const r = await validate({ 'c.yaml': yaml });
    const report = JSON.parse(r.out);
    expect(report.documents).toHaveLength(1);
    expect(report.documents[0]).toMatchObject({ file: 'c.yaml', document: 1, kind: 'KuberhealthyCheck' });
    expect(report.documents[0].problems).toEqual(problems);
    const invalid = problems.some((p) => p.severity === 'error');
    expect(r.code).toBe(invalid ? 1 : 0);
    expect(report.valid).toBe(!invalid);
  });
});

describe('other kinds, many documents, the text report', () => {
  const healthcheck = (spec: string) => `apiVersion: kuberhealthy.github.io/v2
kind: HealthCheck
metadata: {name: web}
spec: ${spec}
`;

  it('a HealthCheck: its pod spec is podSpec.spec; a bare PodSpec is the runner’s error', async () => {
    const r = await validate({
      'hc.yaml': [
        healthcheck('{podSpec: {spec: {containers: [{name: c, image: x, imagePullPolicy: Alwayz}]}}}'),
        healthcheck('{podSpec: {containers: [{name: c, image: x}]}}'),
      ].join('---\n'),
    });
    const { documents } = JSON.parse(r.out);
    expect(documents.map((d: { document: number; result: string }) => [d.document, d.result])).toEqual([
      [1, 'invalid'],
      [2, 'invalid'],
    ]);
    expect(documents[0].problems[0].field).toBe('spec.podSpec.spec.containers[0].imagePullPolicy');
    expect(documents[1].problems[0]).toMatchObject({
      field: 'spec.podSpec.spec',
      message: expect.stringMatching(/^is missing: a HealthCheck wraps/),
    });
  });

  it('a khjob is validated as the runner runs it; other kinds and khstates are not checked', async () => {
    const r = await validate({
      'all.yaml': `apiVersion: comcast.github.io/v1
kind: KuberhealthyJob
metadata: {name: once}
spec: {timeout: 0s, podSpec: {containers: [{name: c, image: x}]}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa}
---
apiVersion: comcast.github.io/v1
kind: KuberhealthyState
metadata: {name: once}
---
apiVersion: comcast.github.io/v2
kind: KuberhealthyCheck
metadata: {name: future}
`,
    });
    const report = JSON.parse(r.out);
    expect(report.documents.map((d: { result: string }) => d.result)).toEqual([
      'invalid',
      'skipped',
      'skipped',
      'invalid',
    ]);
    expect(report.documents[0].problems[0]).toMatchObject({
      field: 'spec.timeout',
      message: expect.stringMatching(/must be greater than zero/),
    });
    expect(report.documents[3].problems[0]).toMatchObject({ field: 'apiVersion' });
    expect(report).toMatchObject({ valid: false, checks: { valid: 0, invalid: 2 }, skipped: 2 });
    expect(r.code).toBe(1);
  });

  it('text: one line per problem naming file, document, object and field, then a summary', async () => {
    const r = await validate(
      {
        'a.yaml': `${khcheck(ok)}---\n${khcheck('{containers: [{name: main}]}').replace('name: ping', 'name: pong')}`,
        'b.yaml': khcheck(ok),
      },
      'text',
    );
    expect(r.out.split('\n')).toEqual([
      'a.yaml, document 2: KuberhealthyCheck checks/pong: error: spec.podSpec.containers[0].image: is missing; give the container its image, such as node:20-alpine',
      'validate: 3 checks, 2 valid, 1 invalid',
    ]);
    expect(r.code).toBe(1);
  });

  it('a List names its items; a file that is not YAML is invalid; one that cannot be read is exit 2', async () => {
    const list = `apiVersion: v1\nkind: List\nitems:\n- ${khcheck('{containers: [{name: main}]}').trim().split('\n').join('\n  ')}\n`;
    const r = await validate({
      'list.yaml': list,
      'bad.yaml': 'a: [',
      'missing.yaml': undefined as unknown as string,
    });
    const report = JSON.parse(r.out);
    expect(report.documents[0]).toMatchObject({ file: 'list.yaml', document: 1, item: 1, result: 'invalid' });
    expect(report.documents[1]).toMatchObject({
      file: 'bad.yaml',
      result: 'invalid',
      problems: [{ message: expect.stringMatching(/^the file is not YAML or JSON/) }],
    });
    expect(r.err).toMatch(/^khrun: validate: missing\.yaml: cannot be read/);
    expect(r.code).toBe(2);
  });

  it('an alias bomb is refused, not expanded', async () => {
    const bomb = [
      'a: &a [x,x,x,x,x,x,x,x,x,x]',
      ...Array.from(
        { length: 8 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
      ),
    ].join('\n');
    const r = await validate({ 'bomb.yaml': bomb });
    expect(JSON.parse(r.out).documents[0].problems[0].message).toMatch(/aliases \(\*name\) expand beyond/);
    expect(r.code).toBe(1);
  });
});

/**
 * Kuberhealthy's own broken examples, which the API server refuses (containers a mapping; a container's
 * fields loose in podSpec): test/unit/convert-roundtrip.test.ts lists the same two.
 */
const UPSTREAM_INVALID: Record<string, Problem[]> = {
  'v2.7.1/cmd/test-check/test-check-set.yaml': [
    { severity: 'error', field: 'spec.podSpec.containers', message: expect.stringMatching(/^is not a list/) },
    {
      severity: 'error',
      field: 'spec.podSpec.containers',
      message: expect.stringMatching(/^is missing, and image is set beside it/),
    },
  ],
};

describe("Kuberhealthy's own manifests (test/fixtures/kuberhealthy) validate clean", () => {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const path = join(dir, f);
      return statSync(path).isDirectory() ? files(path) : /\.ya?ml$/.test(f) ? [path] : [];
    });
  const all = files(FIXTURES);

  it('finds them', () => {
    expect(all.length).toBeGreaterThan(20);
  });

  it.each(all.map((p) => [relative(FIXTURES, p), p]))('%s', async (name, path) => {
    const r = await validate({ [path]: readFileSync(path, 'utf8') });
    const report = JSON.parse(r.out);
    const problems = report.documents.flatMap((d: { problems: Problem[] }) => d.problems);
    expect(problems).toEqual(UPSTREAM_INVALID[name] ?? []);
    expect(r.code).toBe(UPSTREAM_INVALID[name] ? 1 : 0);
  });

  it('and they hold checks of every kind', async () => {
    const kinds = new Set<string>();
    for (const path of all) {
      const report = JSON.parse((await validate({ [path]: readFileSync(path, 'utf8') })).out);
      for (const d of report.documents) if (d.result === 'valid') kinds.add(d.kind);
    }
    expect([...kinds].sort()).toEqual(['HealthCheck', 'KuberhealthyCheck', 'KuberhealthyJob']);
  });
});

describe('khrun convert refuses what validate calls an error', () => {
  it.each([
    [
      'a container without an image',
      '{containers: [{name: main}]}',
      'spec.podSpec.containers[0].image is missing',
    ],
    [
      'imagePullPolicy: Alwayz',
      '{containers: [{name: main, image: x, imagePullPolicy: Alwayz}]}',
      'spec.podSpec.containers[0].imagePullPolicy "Alwayz" is not a pull policy',
    ],
  ])('%s: exit 2, nothing on stdout, the field named', async (_, podSpec, message) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await convertCommand({
      files: ['c.yaml'],
      targets: [],
      scope: { namespace: 'ns' },
      output: 'yaml',
      apply: false,
      acceptLosses: false,
      cluster: undefined,
      readInput: async () => khcheck(podSpec),
      write: (l) => out.push(l),
      warn: (l) => err.push(l),
    });
    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err.join('\n')).toContain(`invalid: KuberhealthyCheck checks/ping (c.yaml): ${message}`);
  });
});

describe('quantities', () => {
  it.each([
    ['100m', 0.1],
    ['1Gi', 2 ** 30],
    ['0.5', 0.5],
    [2, 2],
    ['1e3', 1000],
    ['64M', 64e6],
    ['1 Gi', undefined],
    ['one', undefined],
    ['', undefined],
  ])('%j is %j', (text, value) => {
    const parsed = quantityValue(text);
    if (value === undefined) expect(parsed).toBeUndefined();
    else expect(parsed).toBeCloseTo(value);
  });
});
