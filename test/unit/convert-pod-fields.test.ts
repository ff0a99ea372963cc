import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { dropV3OnlyPodFields, V3_ONLY_POD_FIELDS } from '../../lib/convert/v3-only-pod-fields.ts';

const FIXTURES = join(import.meta.dirname, '../fixtures/kuberhealthy');

interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
}

/** Every field path a structural schema allows, `[]` for list items, as the API server prunes by it. */
function schemaPaths(schema: Schema | undefined, prefix = ''): Set<string> {
  const out = new Set<string>();
  if (!schema) return out;
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    const path = prefix ? `${prefix}.${key}` : key;
    out.add(path);
    for (const p of schemaPaths(sub, path)) out.add(p);
  }
  if (schema.items) for (const p of schemaPaths(schema.items, `${prefix}[]`)) out.add(p);
  if (typeof schema.additionalProperties === 'object')
    for (const p of schemaPaths(schema.additionalProperties, `${prefix}{}`)) out.add(p);
  return out;
}

type Crd = {
  kind: string;
  metadata: { name: string };
  spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
};
const specOf = (crd: Crd) => crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.spec?.properties ?? {};

const v2Crds = (
  loadAll(readFileSync(join(FIXTURES, 'v2.7.1/deploy/kuberhealthy.yaml'), 'utf8')) as Crd[]
).filter((d) => d?.kind === 'CustomResourceDefinition');
const v2Pod = (name: string) => specOf(v2Crds.find((c) => c.metadata.name === name) as Crd).podSpec;
const v3Crd = load(
  readFileSync(join(FIXTURES, 'v3.0.0/deploy/kustomize/base/healthcheck.yaml'), 'utf8'),
) as Crd;
const v3Pod = specOf(v3Crd).podSpec?.properties?.spec;

describe('the PodSpec fields only v3.0.0 knows', () => {
  it('are exactly those of the vendored CRDs (outermost only); khjob and khcheck share one schema', () => {
    const v2 = schemaPaths(v2Pod('khchecks.comcast.github.io'));
    expect(schemaPaths(v2Pod('khjobs.comcast.github.io'))).toEqual(v2);
    const v3 = schemaPaths(v3Pod);
    expect([...v2].filter((p) => !v3.has(p))).toEqual([]);
    const onlyV3 = [...v3].filter((p) => !v2.has(p)).sort();
    const outermost = onlyV3.filter(
      (p) => !onlyV3.some((q) => q !== p && /^[.[{]/.test(p.slice(q.length)) && p.startsWith(q)),
    );
    expect([...V3_ONLY_POD_FIELDS].sort()).toEqual(outermost);
  });

  it('are removed wherever they occur, items included, each reported at its own path', () => {
    const pod = {
      hostUsers: false,
      containers: [
        {
          name: 'a',
          image: 'x',
          restartPolicy: 'Always',
          volumeMounts: [{ name: 'v', recursiveReadOnly: 'Enabled' }],
        },
        { name: 'b', image: 'y', resizePolicy: [] },
      ],
      restartPolicy: 'Never',
    };
    const findings = dropV3OnlyPodFields(pod, ['spec', 'podSpec', 'spec'], 'to-v2');
    expect(findings.map((f) => f.field.join('.')).sort()).toEqual([
      'spec.podSpec.spec.containers.0.restartPolicy',
      'spec.podSpec.spec.containers.0.volumeMounts.0.recursiveReadOnly',
      'spec.podSpec.spec.containers.1.resizePolicy',
      'spec.podSpec.spec.hostUsers',
    ]);
    expect(pod).toEqual({
      containers: [
        { name: 'a', image: 'x', volumeMounts: [{ name: 'v' }] },
        { name: 'b', image: 'y' },
      ],
      restartPolicy: 'Never',
    });
  });
});
