import { describe, expect, it } from 'vitest';
import { convertAll } from '../../lib/convert/convert-all.ts';
import { convertDocument } from '../../lib/convert/convert-document.ts';
import type { Json, JsonObject } from '../../lib/convert/field-path.ts';
import { parseDocuments } from '../../lib/convert/parse-documents.ts';
import { reportLines } from '../../lib/convert/report-lines.ts';

// The field mapping, one rule per case, settled from v2.7.1 (pkg/apis/khcheck/v1, khjob/v1,
// cmd/kuberhealthy, pkg/checks/external) and v3.0.0 (pkg/api, internal/kuberhealthy, its CRD).

const container = { name: 'main', image: 'check:1' };
const khcheck = (spec: JsonObject, metadata: JsonObject = { name: 'c', namespace: 'ns' }): JsonObject => ({
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata,
  spec,
});
const healthCheck = (
  spec: JsonObject,
  metadata: JsonObject = { name: 'c', namespace: 'ns' },
): JsonObject => ({
  apiVersion: 'kuberhealthy.github.io/v2',
  kind: 'HealthCheck',
  metadata,
  spec,
});

function converted(value: Json) {
  const result = convertDocument({ origin: 'test', value });
  if (result.kind !== 'converted') throw new Error(JSON.stringify(result));
  return result;
}
const fields = (r: ReturnType<typeof converted>) => r.findings.map((f) => `${f.effect} ${f.field.join('.')}`);

describe('khcheck and khjob to HealthCheck', () => {
  it('wraps the PodSpec, keeps the durations as written, writes v2’s restartPolicy; nothing else to say', () => {
    const r = converted(
      khcheck({
        runInterval: '90s',
        timeout: '1h30m',
        extraLabels: { a: 'b' },
        extraAnnotations: { 'x.io/y': 'z' },
        podSpec: { containers: [container], restartPolicy: 'Never', serviceAccountName: 'sa' },
      }),
    );
    expect(r.output).toEqual(
      healthCheck({
        runInterval: '90s',
        timeout: '1h30m',
        extraAnnotations: { 'x.io/y': 'z' },
        extraLabels: { a: 'b' },
        podSpec: { spec: { containers: [container], restartPolicy: 'Never', serviceAccountName: 'sa' } },
      }),
    );
    expect(r.findings).toEqual([]);
  });

  it('writes v2’s defaults where v3’s differ: timeout 5m (v3: 30s), interval 10m, restartPolicy Never', () => {
    const r = converted(khcheck({ podSpec: { containers: [container] } }));
    expect(r.output.spec).toEqual({
      runInterval: '10m',
      timeout: '5m',
      podSpec: { spec: { containers: [container], restartPolicy: 'Never' } },
    });
    expect(fields(r)).toEqual([
      'defaulted spec.runInterval',
      'defaulted spec.timeout',
      'defaulted spec.podSpec.restartPolicy',
    ]);
  });

  it('a restartPolicy v2 overrode becomes Never, said as changed', () => {
    const r = converted(
      khcheck({
        runInterval: '1m',
        timeout: '1m',
        podSpec: { containers: [container], restartPolicy: 'Always' },
      }),
    );
    expect(r.findings).toEqual([expect.objectContaining({ effect: 'changed', value: 'Never' })]);
  });

  it('a khjob becomes a singleRunOnly HealthCheck without interval; a phase it reached is lost', () => {
    const r = converted({
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyJob',
      metadata: { name: 'j' },
      spec: {
        phase: 'Completed',
        timeout: '2m',
        podSpec: { containers: [container], restartPolicy: 'Never' },
      },
    });
    expect(r.output.spec).toEqual({
      singleRunOnly: true,
      timeout: '2m',
      podSpec: { spec: { containers: [container], restartPolicy: 'Never' } },
    });
    expect(fields(r)).toEqual(['note kind', 'lost spec.phase']);
  });

  it('keeps name, namespace, labels, annotations; drops server fields, kubectl’s and khrun’s bookkeeping; owner references are lost', () => {
    const r = converted(
      khcheck(
        { runInterval: '1m', timeout: '1m', podSpec: { containers: [container], restartPolicy: 'Never' } },
        {
          name: 'c',
          namespace: 'ns',
          uid: 'u',
          resourceVersion: '7',
          generation: 2,
          creationTimestamp: '2026-01-01T00:00:00Z',
          managedFields: [],
          labels: { l: 'v' },
          annotations: {
            a: 'v',
            'kubectl.kubernetes.io/last-applied-configuration': '{}',
            'khrun.dev/owner': 'khrun',
          },
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'x' }],
          finalizers: ['kuberhealthy.io/healthcheck'],
        },
      ),
    );
    expect(r.output.metadata).toEqual({
      name: 'c',
      namespace: 'ns',
      labels: { l: 'v' },
      annotations: { a: 'v' },
    });
    expect(fields(r)).toEqual(['lost metadata.ownerReferences']);
  });

  it('a field neither side has is lost, by name', () => {
    const r = converted(
      khcheck({
        runInterval: '1m',
        timeout: '1m',
        schedule: '* * * * *',
        podSpec: { containers: [container], restartPolicy: 'Never' },
      }),
    );
    expect(fields(r)).toEqual(['lost spec.schedule']);
  });
});

describe('HealthCheck to khcheck or khjob', () => {
  it('unwraps the PodSpec; podSpec.metadata moves into extraLabels and extraAnnotations; v3’s defaults are written', () => {
    const r = converted(
      healthCheck({
        extraLabels: { a: '1', same: 'x' },
        podSpec: {
          metadata: { labels: { b: '2', same: 'y' }, annotations: { c: '3' } },
          spec: { containers: [container] },
        },
      }),
    );
    expect(r.output).toEqual(
      khcheck({
        runInterval: '10m',
        timeout: '30s',
        extraAnnotations: { c: '3' },
        extraLabels: { a: '1', same: 'x', b: '2' },
        podSpec: { containers: [container], restartPolicy: 'Never' },
      }),
    );
    expect(fields(r)).toEqual([
      'defaulted spec.runInterval',
      'defaulted spec.timeout',
      'defaulted spec.podSpec.spec.restartPolicy',
      'moved spec.podSpec.metadata.labels.b',
      // v3 puts extraLabels last, so this value never reached the pod.
      'lost spec.podSpec.metadata.labels.same',
      'moved spec.podSpec.metadata.annotations.c',
    ]);
  });

  it('singleRunOnly makes a khjob; its interval is lost; PodSpec fields v2.7.1 lacks are lost', () => {
    const r = converted(
      healthCheck({
        singleRunOnly: true,
        runInterval: '5m',
        timeout: '1m',
        podSpec: {
          spec: {
            containers: [{ ...container, restartPolicy: 'Always' }],
            hostUsers: false,
            restartPolicy: 'Never',
          },
        },
      }),
    );
    expect(r.output).toMatchObject({
      kind: 'KuberhealthyJob',
      spec: { timeout: '1m', podSpec: { containers: [container], restartPolicy: 'Never' } },
    });
    expect(r.output.spec).not.toHaveProperty('runInterval');
    expect(fields(r)).toEqual([
      'lost spec.runInterval',
      'lost spec.podSpec.spec.containers.0.restartPolicy',
      'lost spec.podSpec.spec.hostUsers',
    ]);
  });

  it('status is not carried over', () => {
    const r = converted({
      ...healthCheck({
        runInterval: '1m',
        timeout: '1m',
        podSpec: { spec: { containers: [container], restartPolicy: 'Never' } },
      }),
      status: { ok: true },
    });
    expect(r.output).not.toHaveProperty('status');
    expect(r.findings).toEqual([]);
  });
});

describe('input that cannot be converted', () => {
  const invalid = (value: Json) => {
    const r = convertDocument({ origin: 'f.yaml, document 2', value });
    if (r.kind !== 'invalid') throw new Error(JSON.stringify(r));
    return reportLines(r);
  };

  it.each([
    [
      'v2’s podSpec shape in a HealthCheck',
      healthCheck({ podSpec: { containers: [container] } }),
      'invalid: HealthCheck ns/c (f.yaml, document 2): spec.podSpec.spec is missing, and spec.podSpec.containers is set; in a HealthCheck the pod fields go under spec.podSpec.spec (v3 wraps the PodSpec)',
    ],
    [
      'v3’s wrapper in a khcheck',
      khcheck({ runInterval: '1m', podSpec: { spec: { containers: [container] } } }),
      "invalid: KuberhealthyCheck ns/c (f.yaml, document 2): spec.podSpec.containers is missing, and spec is set; a KuberhealthyCheck's podSpec is the PodSpec itself: move the fields under spec.podSpec.spec up one level",
    ],
    [
      'a duration Go does not parse',
      khcheck({ runInterval: '5 minutes', podSpec: { containers: [container] } }),
      'invalid: KuberhealthyCheck ns/c (f.yaml, document 2): spec.runInterval "5 minutes" is not a Go duration (time: unknown unit " minutes" in duration "5 minutes"); write a positive Go duration such as 90s, 5m or 1h30m',
    ],
    [
      'a label that is not a string',
      khcheck({ runInterval: '1m', extraLabels: { n: 1 }, podSpec: { containers: [container] } }),
      'invalid: KuberhealthyCheck ns/c (f.yaml, document 2): spec.extraLabels.n is 1, not a string; write it as a mapping of keys to quoted strings',
    ],
    [
      'an apiVersion no release serves',
      { ...healthCheck({}), apiVersion: 'kuberhealthy.github.io/v1' },
      'invalid: HealthCheck ns/c (f.yaml, document 2): apiVersion is "kuberhealthy.github.io/v1", which no Kuberhealthy release serves; use kuberhealthy.github.io/v2',
    ],
  ])('%s', (_what, value, line) => {
    expect(invalid(value)).toEqual([line]);
  });

  it('one invalid document writes nothing at all; a khstate is dropped, other kinds are kept', () => {
    const docs = (value: Json[]) => value.map((v, i) => ({ origin: `d${i}`, value: v }));
    const good = khcheck({
      runInterval: '1m',
      timeout: '1m',
      podSpec: { containers: [container], restartPolicy: 'Never' },
    });
    const sa = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' } };
    const state = {
      apiVersion: 'comcast.github.io/v1',
      kind: 'KuberhealthyState',
      metadata: { name: 'c' },
      spec: {},
    };
    expect(convertAll(docs([good, khcheck({})]))).toMatchObject({ verdict: 'invalid', outputs: [] });
    const ok = convertAll(docs([good, sa, state]));
    expect(ok.verdict).toBe('clean');
    expect(ok.outputs.map((o) => o.kind)).toEqual(['HealthCheck', 'ServiceAccount']);
    expect(ok.converted.map((o) => o.kind)).toEqual(['HealthCheck']);
    expect(convertAll(docs([sa])).verdict).toBe('empty');
  });
});

describe('reading the input', () => {
  it('takes several documents, skips empty ones and opens Lists; dates stay strings', () => {
    const text = [
      'apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {d: 2026-01-01}}',
      '',
      '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}',
    ].join('\n---\n');
    const parsed = parseDocuments({ origin: 'in.yaml', text });
    if ('problem' in parsed) throw new Error(parsed.problem.problem);
    expect(parsed.documents.map((d) => d.origin)).toEqual([
      'in.yaml, document 1, item 1',
      'in.yaml, document 1, item 2',
      'in.yaml, document 3',
    ]);
    expect(parsed.documents[1]?.value).toMatchObject({ data: { d: '2026-01-01' } });
  });

  it('says where text is not YAML', () => {
    expect(parseDocuments({ origin: 'bad.yaml', text: 'a: b\nc: [d\n' })).toEqual({
      problem: {
        origin: 'bad.yaml',
        problem: expect.stringMatching(/^is not YAML or JSON: .*\(line 3, column 1\)$/),
      },
    });
  });
});
