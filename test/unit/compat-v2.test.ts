import { imagesIn, kuberhealthyV2Entries } from '@khrun/devkit/local/kuberhealthy-v2.ts';
import { describe, expect, it } from 'vitest';
import { replaceBlock } from '../compat/table.ts';
import { daemonObjects, inNamespace, khjobsCrd } from '../compat/v2-manifests.ts';
import { compareOutcomes, writeCompatResults } from '../compat/v2-results.ts';
import { renderV2Table } from '../compat/v2-table.ts';

const CHECK_YAML = `
apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: { name: daemonset, namespace: kuberhealthy }
spec:
  podSpec:
    containers:
      - name: main
        image: kuberhealthy/daemonset-check:v3.3.0
        env:
          - { name: POD_NAMESPACE, value: "kuberhealthy" }
          - { name: OTHER, value: "kuberhealthy" }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: b }
subjects: [{ kind: ServiceAccount, name: sa, namespace: kuberhealthy }]
`;

const DEPLOY_YAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: khjobs.comcast.github.io }
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: { name: kuberhealthy-pdb, namespace: kuberhealthy }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: kuberhealthy, namespace: kuberhealthy }
spec:
  template:
    spec:
      containers:
        - name: kuberhealthy
          image: kuberhealthy/kuberhealthy:v2.7.0
          command: [/app/kuberhealthy]
          env: [{ name: POD_NAME, valueFrom: { fieldRef: { fieldPath: metadata.name } } }]
---
apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: { name: deployment, namespace: kuberhealthy }
`;

describe('Kuberhealthy v2 YAMLs moved to a test namespace, nothing else changed', () => {
  it('moves metadata, binding subjects and a literal POD_NAMESPACE, and says so', () => {
    const { objects, rewrites } = inNamespace(CHECK_YAML, 'kt-1');
    expect(objects[0]?.metadata?.namespace).toBe('kt-1');
    expect(objects[1]?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'sa', namespace: 'kt-1' }]);
    const env = (objects[0]!.spec as { podSpec: { containers: Array<{ env: unknown[] }> } }).podSpec
      .containers[0]?.env;
    expect(env).toEqual([
      { name: 'POD_NAMESPACE', value: 'kt-1' },
      { name: 'OTHER', value: 'kuberhealthy' },
    ]);
    expect(rewrites).toEqual([
      { object: 'KuberhealthyCheck/daemonset', change: expect.stringContaining('POD_NAMESPACE') },
    ]);
  });

  it("the daemon's objects: no CRD, PDB or khcheck; the reporting URL is the pod's own address", () => {
    const { objects, rewrites } = daemonObjects(DEPLOY_YAML, 'kt-2');
    expect(objects.map((o) => o.kind)).toEqual(['Deployment']);
    const container = (
      objects[0]!.spec as { template: { spec: { containers: Array<{ env: unknown[]; command: string[] }> } } }
    ).template.spec.containers[0];
    expect(container?.command).toEqual(['/app/kuberhealthy']);
    expect(container?.env).toContainEqual({
      name: 'KH_EXTERNAL_REPORTING_URL',
      value: 'http://$(POD_IP):8080/externalCheckStatus',
    });
    expect(container?.env).toContainEqual({
      name: 'POD_IP',
      valueFrom: { fieldRef: { fieldPath: 'status.podIP' } },
    });
    expect(rewrites.map((r) => r.object)).toEqual([
      'PodDisruptionBudget/kuberhealthy-pdb',
      'KuberhealthyCheck/deployment',
      'Deployment/kuberhealthy',
    ]);
    expect(khjobsCrd(DEPLOY_YAML).metadata?.name).toBe('khjobs.comcast.github.io');
  });
});

describe('image-map entries from the YAMLs and Dockerfiles', () => {
  it('finds every container image, and maps the built kuberhealthy/<command> ones with their in-image program', () => {
    expect(imagesIn({ spec: { template: { spec: { containers: [{ name: 'a', image: 'x:1' }] } } } })).toEqual(
      ['x:1'],
    );
    const entries = kuberhealthyV2Entries({
      manifests: [CHECK_YAML, DEPLOY_YAML, 'kind: Pod\nspec: { containers: [{ name: u, image: ubuntu }] }'],
      dockerfiles: { kuberhealthy: 'FROM scratch\nENTRYPOINT ["/app/kuberhealthy"]\n' },
      binDir: '/cache/kh',
    });
    expect(entries).toEqual([
      {
        image: 'kuberhealthy/kuberhealthy',
        entrypoint: ['/cache/kh/kuberhealthy'],
        cmd: [],
        programs: { '/app/kuberhealthy': '/cache/kh/kuberhealthy' },
      },
      {
        image: 'kuberhealthy/daemonset-check',
        entrypoint: ['/cache/kh/daemonset-check'],
        cmd: [],
        programs: {},
      },
    ]);
  });
});

describe('comparing what both recorded', () => {
  const namespaces = ['v2k-1', 'v2d-2'];

  it('the same OK and errors, namespaces aside, are the same', () => {
    const r = compareOutcomes({
      kuberhealthy: { ok: false, errors: ['pod v2d-2/x failed'] },
      khrun: { ok: false, errors: ['pod v2k-1/x failed'] },
      namespaces,
    });
    expect(r).toMatchObject({ same: true, note: '' });
  });

  it.each([
    ['OK differs', { ok: true, errors: [] }, { ok: false, errors: ['e'] }],
    ['errors differ', { ok: false, errors: ['a'] }, { ok: false, errors: ['b'] }],
    ['one has no khstate', { missing: true as const }, { ok: true, errors: [] }],
    ['neither has one', { missing: true as const }, { missing: true as const }],
  ])('%s: not the same, and the note says both', (_what, kuberhealthy, khrun) => {
    const r = compareOutcomes({ kuberhealthy, khrun, namespaces });
    expect(r.same).toBe(false);
    expect(r.note).toMatch(/^Kuberhealthy recorded .+; khrun recorded .+/);
  });

  it('writes nothing without KHRUN_COMPAT_OUT (the ordinary suite never changes a committed file)', async () => {
    expect(await writeCompatResults([], { daemonRewrites: [] }, {})).toBeUndefined();
  });
});

describe('the docs/compatibility.md block', () => {
  it('replaces only what is between its markers', () => {
    const readme = 'a\n<!-- compat-v2:begin (by npm run compat) -->\nold\n<!-- compat-v2:end -->\nb\n';
    expect(replaceBlock(readme, 'compat-v2', 'new\n')).toBe(
      'a\n<!-- compat-v2:begin (by npm run compat) -->\nnew\n<!-- compat-v2:end -->\nb\n',
    );
    expect(() => replaceBlock('no markers', 'compat-v3', '')).toThrow(/compat-v3:begin/);
  });

  it('renders one row per check, an explained difference as such, and how it was measured', () => {
    const table = renderV2Table({
      kuberhealthy: 'v2.7.1',
      measured: '2026-12-01T12:00:00.000Z',
      how: 'how',
      daemonRewrites: ['Deployment/kuberhealthy: env added'],
      rows: [
        {
          check: 'a',
          yaml: 'cmd/a/a.yaml',
          khcheck: 'a',
          edits: [],
          kuberhealthy: { ok: true, errors: [] },
          khrun: { ok: true, errors: [] },
          same: true,
          note: '',
        },
        {
          check: 'b',
          yaml: 'cmd/b/b.yaml',
          khcheck: 'b',
          edits: ['e|1'],
          kuberhealthy: { ok: false, errors: ['x'] },
          khrun: { ok: false, errors: ['y'] },
          same: false,
          explained: true,
          note: 'why',
        },
      ],
    });
    expect(table).toContain('| a (`cmd/a/a.yaml`) | OK | OK | yes |  |');
    expect(table).toContain(
      '| b (`cmd/b/b.yaml`) | not OK: “x” | not OK: “y” | no, explained | e\\|1; why |',
    );
    expect(table).toContain('Measured by `npm run compat` on 2026-12-01, build not recorded: how.');
  });
});
