import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { resolveHelm } from '@khrun/devkit/local/binaries.ts';
import { loadAll } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEPLOY_NAMESPACE, helmTemplate, staleFiles } from '../../infra/helm/render-deploy.ts';

// The chart (infra/helm/khrun) rendered by the pinned helm, in the unit suite. The kustomization's files
// (infra/deploy) must be exactly its rendering: a verb or a validation changed in a template without
// writing them again fails here, and written again it meets deploy-policies.test.ts's exact verbs and
// policies. The values that change RBAC and admission (namespaces, mode, admissionPolicy) render what they
// say. helm is built from the Go module proxy the first time (infra/build/helm, cached in ~/.cache/khrun).

const root = join(import.meta.dirname, '../..');
let helm: string;

beforeAll(async () => {
  helm = await resolveHelm({
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(root, 'infra/build'),
    onProgress: (line) => console.log(`[helm] ${line}`),
  });
}, 1_200_000);

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
  spec?: { validations?: unknown[]; policyName?: string; validationActions?: string[] };
}

async function render(set: string[] = [], showOnly?: string): Promise<Rendered[]> {
  const text = await helmTemplate(helm, root, { set, ...(showOnly ? { showOnly } : {}) });
  return (loadAll(text) as Array<Rendered | null>).filter((o): o is Rendered => Boolean(o?.kind));
}

const deployed = async (path: string) =>
  (loadAll(await readFile(join(root, path), 'utf8')) as Array<Rendered | null>).filter((o): o is Rendered =>
    Boolean(o?.kind),
  );

const bindingsOf = (objects: Rendered[], name: string) =>
  objects
    .filter((o) => /Binding$/.test(o.kind) && o.metadata.name === name)
    .map((b) => ({
      kind: b.kind,
      namespace: b.metadata.namespace,
      roleRef: `${b.roleRef?.kind}/${b.roleRef?.name}`,
      subjects: (b.subjects ?? []).map((s) => `${s.kind}/${s.namespace}/${s.name}`),
    }));

describe('the chart rendered by helm', () => {
  it('is what infra/deploy holds, file for file (npx tsx infra/helm/render-deploy.ts writes them)', async () => {
    expect(await staleFiles(helm, root)).toEqual([]);
  }, 120_000);

  it('renders the same roles and admission policies as infra/deploy holds', async () => {
    const kinds = /^(ClusterRole|Role|ValidatingAdmissionPolicy|ValidatingAdmissionPolicyBinding)$/;
    const pick = (objects: Rendered[]) =>
      objects
        .filter((o) => kinds.test(o.kind))
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const chart = [...(await render([], 'runner.yaml')), ...(await render([], 'admission.yaml'))];
    const files = [
      ...(await deployed('infra/deploy/runner.yaml')),
      ...(await deployed('infra/deploy/admission.yaml')),
    ];
    expect(pick(chart)).toEqual(pick(files));
    expect(pick(chart).filter((o) => o.kind === 'ValidatingAdmissionPolicy').length).toBeGreaterThan(0);
  }, 60_000);

  it('binds the runner cluster-wide by default, and only in the namespaces named when there are some', async () => {
    const release = DEPLOY_NAMESPACE;
    expect(bindingsOf(await render([], 'runner.yaml'), 'khrun-runner')).toEqual([
      {
        kind: 'ClusterRoleBinding',
        namespace: undefined,
        roleRef: 'ClusterRole/khrun-runner',
        subjects: [`ServiceAccount/${release}/khrun-runner`],
      },
    ]);
    expect(bindingsOf(await render(['namespaces={team-a,team-b}'], 'runner.yaml'), 'khrun-runner')).toEqual(
      ['team-a', 'team-b'].map((namespace) => ({
        kind: 'RoleBinding',
        namespace,
        roleRef: 'ClusterRole/khrun-runner',
        subjects: [`ServiceAccount/${release}/khrun-runner`],
      })),
    );
    // In sync mode the CronJobs of a namespace run as its own khrun-runner ServiceAccount: bound there too.
    const sync = await render(['mode=sync', 'namespaces={team-a}'], 'runner.yaml');
    expect(bindingsOf(sync, 'khrun-runner')).toEqual([
      {
        kind: 'RoleBinding',
        namespace: 'team-a',
        roleRef: 'ClusterRole/khrun-runner',
        subjects: [`ServiceAccount/${release}/khrun-runner`, 'ServiceAccount/team-a/khrun-runner'],
      },
    ]);
  }, 60_000);

  it('renders every admission policy with a Deny binding, and none when admissionPolicy.enabled=false', async () => {
    const on = await render([], 'admission.yaml');
    const policies = on.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
    const bindings = on.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding');
    expect(policies.length).toBeGreaterThan(0);
    expect(bindings.map((b) => b.spec?.policyName).sort()).toEqual(
      policies.map((p) => p.metadata.name).sort(),
    );
    for (const b of bindings) expect(b.spec?.validationActions, b.metadata.name).toEqual(['Deny']);
    const off = await helmTemplate(helm, root, { set: ['admissionPolicy.enabled=false'] });
    expect(off).not.toMatch(/kind: ValidatingAdmissionPolicy/);
  }, 60_000);
});
