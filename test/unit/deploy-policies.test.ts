import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';

// The shipped RBAC and admission policies, read as YAML: the kustomization's files (infra/deploy, rendered
// from the chart) and the chart's template source. A changed verb, a removed validation or a policy left
// without its binding fails here, before any cluster runs; test/integration/admission-routes.test.ts and
// rbac.test.ts prove what they do against a real API server.

const root = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>;
  spec?: Record<string, unknown>;
}

const DEPLOY_FILES = [
  'infra/deploy/runner.yaml',
  'infra/deploy/tick.yaml',
  'infra/deploy/admission.yaml',
  'infra/deploy/components/sync/sync.yaml',
  'infra/deploy/components/serve/serve.yaml',
];
const objects = DEPLOY_FILES.flatMap((f) => loadAll(read(f)) as K8sObject[]).filter(Boolean);
const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
const named = (kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${DEPLOY_FILES.join(', ')}`);
  return found;
};

/** Each rule as one line: groups, resources, verbs (sorted), names. */
const rulesOf = (o: K8sObject) =>
  (o.rules ?? []).map(
    (r) =>
      `${r.apiGroups.join(',') || 'core'} ${r.resources.join(',')}: ${[...r.verbs].sort().join(',')}` +
      (r.resourceNames ? ` [${r.resourceNames.join(',')}]` : ''),
  );

describe('RBAC: every verb of every khrun role, exactly', () => {
  it.each<[string, string, string[]]>([
    [
      'ClusterRole',
      'khrun-runner',
      [
        'comcast.github.io khchecks: get',
        'comcast.github.io khjobs: get,update',
        'comcast.github.io khstates: create,delete,get,list,update,watch',
        'kuberhealthy.github.io healthchecks: get,list,update,watch',
        'kuberhealthy.github.io healthchecks/status,healthchecks/finalizers: update',
        'core pods: create,delete,get,list,watch',
        'core pods/eviction: create',
        'core events: create',
        'core configmaps: get [khrun-notifications]',
      ],
    ],
    [
      'ClusterRole',
      'khrun-tick',
      [
        'comcast.github.io khchecks: get,list',
        'comcast.github.io khjobs: list',
        'kuberhealthy.github.io healthchecks: get,list,update',
        'comcast.github.io khstates: create,get,list,update',
      ],
    ],
    ['Role', 'khrun-tick', ['batch jobs: create', 'core podtemplates: get [khrun-runner]']],
    [
      'ClusterRole',
      'khrun-sync',
      ['comcast.github.io khchecks: get,list,watch', 'kuberhealthy.github.io healthchecks: list'],
    ],
    ['ClusterRole', 'khrun-sync-cronjobs', ['batch cronjobs: create,delete,get,list,patch,update,watch']],
    ['Role', 'khrun-sync', ['core podtemplates: get [khrun-runner]']],
    [
      'ClusterRole',
      'khrun-server',
      [
        'comcast.github.io khstates: get,list,update,watch',
        'kuberhealthy.github.io healthchecks: list,watch',
        'kuberhealthy.github.io healthchecks: get,update',
        'kuberhealthy.github.io healthchecks/status: update',
        'core pods/log: get',
      ],
    ],
    [
      'ClusterRole',
      'khrun-rerun',
      [
        'comcast.github.io khchecks,khjobs: get',
        'comcast.github.io khstates: get,list,watch',
        'kuberhealthy.github.io healthchecks: get,list,watch',
        'core pods: list',
        'core pods/log: get',
      ],
    ],
    [
      'Role',
      'khrun-rerun',
      [
        'core podtemplates: get [khrun-runner]',
        'batch jobs: create,list,watch',
        'core pods: list,watch',
        'core pods/log: get',
        'core events: list,watch',
      ],
    ],
  ])('%s %s', (kind, name, rules) => {
    expect(rulesOf(named(kind, name))).toEqual(rules);
  });

  it('binds nothing to any ServiceAccount but its own, and nothing to cluster-admin', () => {
    for (const b of [...byKind('ClusterRoleBinding'), ...byKind('RoleBinding')]) {
      const binding = b as unknown as {
        roleRef: { name: string };
        subjects: Array<{ kind: string; name: string }>;
      };
      expect(binding.roleRef.name, b.metadata.name).toMatch(/^khrun-/);
      const allowed = b.metadata.name === 'khrun-sync-cronjobs' ? 'khrun-sync' : b.metadata.name;
      expect(binding.subjects.map((s) => `${s.kind}/${s.name}`)).toEqual([`ServiceAccount/${allowed}`]);
    }
  });
});

interface Policy {
  metadata: { name: string };
  spec: {
    failurePolicy: string;
    paramKind?: { kind: string };
    matchConstraints: { resourceRules: Array<{ operations: string[]; resources: string[] }> };
    matchConditions?: Array<{ expression: string }>;
    validations: Array<{ expression: string }>;
  };
}
const policies = byKind('ValidatingAdmissionPolicy') as unknown as Policy[];
const policy = (name: string) => named('ValidatingAdmissionPolicy', name) as unknown as Policy;
const cel = (name: string) =>
  policy(name)
    .spec.validations.map((v) => v.expression)
    .join('\n');

describe('admission policies: each in force, matching what it narrows', () => {
  const EXPECTED: Record<string, { ops: string[]; resources: string[]; validations: number }> = {
    'khrun-runner-checker-pods': { ops: ['CREATE'], resources: ['pods'], validations: 4 },
    'khrun-runner-node-access': { ops: ['CREATE'], resources: ['pods'], validations: 4 },
    'khrun-runner-checker-pod-spec': { ops: ['CREATE'], resources: ['pods'], validations: 5 },
    'khrun-runner-khjob-pod-spec': { ops: ['CREATE'], resources: ['pods'], validations: 5 },
    'khrun-runner-healthcheck-pod-spec': { ops: ['CREATE'], resources: ['pods'], validations: 5 },
    'khrun-runner-pod-removal': {
      ops: ['DELETE', 'CREATE'],
      resources: ['pods', 'pods/eviction'],
      validations: 2,
    },
    'khrun-tick-jobs': { ops: ['CREATE', 'UPDATE'], resources: ['jobs'], validations: 2 },
    'khrun-tick-job-template': { ops: ['CREATE', 'UPDATE'], resources: ['jobs'], validations: 2 },
    'khrun-check-specs': {
      ops: ['UPDATE', 'UPDATE'],
      resources: ['khchecks', 'khjobs', 'healthchecks'],
      validations: 2,
    },
    'khrun-sync-cronjobs': { ops: ['CREATE', 'UPDATE'], resources: ['cronjobs'], validations: 4 },
    'khrun-sync-cronjob-removal': { ops: ['DELETE'], resources: ['cronjobs'], validations: 1 },
    'khrun-sync-cronjob-template': { ops: ['CREATE', 'UPDATE'], resources: ['cronjobs'], validations: 2 },
  };

  it('ships exactly these policies', () => {
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(Object.entries(EXPECTED))('%s', (name, want) => {
    const p = policy(name);
    expect(p.spec.failurePolicy).toBe('Fail');
    const rules = p.spec.matchConstraints.resourceRules;
    expect(rules.flatMap((r) => r.operations)).toEqual(want.ops);
    expect(rules.flatMap((r) => r.resources)).toEqual(want.resources);
    expect(p.spec.validations).toHaveLength(want.validations);
    expect(p.spec.matchConditions?.length, 'matches only khrun identities').toBeGreaterThan(0);
    const bindings = byKind('ValidatingAdmissionPolicyBinding').filter(
      (b) => (b.spec as { policyName: string }).policyName === name,
    );
    expect(bindings.map((b) => (b.spec as { validationActions: string[] }).validationActions)).toEqual([
      ['Deny'],
    ]);
  });

  it('keeps every checker pod off the node unless an admin labelled its namespace', () => {
    const rules = cel('khrun-runner-node-access');
    for (const field of [
      'hostNetwork',
      'hostPID',
      'hostIPC',
      'hostPath',
      'hostPort',
      'privileged',
      'capabilities.add',
      'procMount',
      "seccompProfile.type != 'Unconfined'",
      'hostProcess',
    ])
      expect(rules, field).toContain(field);
    // Each validation is lifted by the namespace label alone, which khrun's identities cannot set.
    for (const v of policy('khrun-runner-node-access').spec.validations)
      expect(v.expression).toMatch(/^variables\.opened \|\|/);
    expect(JSON.stringify(policy('khrun-runner-node-access').spec)).toContain(
      "namespaceObject.metadata.labels['khrun.dev/privileged-checks'] == 'allowed'",
    );
  });

  it('pins a checker pod to one owner that a parameter constrains, named or by uid', () => {
    expect(cel('khrun-runner-checker-pods')).toContain('object.metadata.ownerReferences.size() == 1');
    for (const name of [
      'khrun-runner-checker-pod-spec',
      'khrun-runner-khjob-pod-spec',
      'khrun-runner-healthcheck-pod-spec',
    ]) {
      const p = policy(name);
      const vars = (p.spec as unknown as { variables: Array<{ name: string; expression: string }> })
        .variables;
      expect(vars.find((v) => v.name === 'mine')?.expression).toContain('o.uid == params.metadata.uid');
      expect(p.spec.validations.every((v) => v.expression.startsWith('!variables.mine || ('))).toBe(true);
      const all = cel(name);
      expect(all).toContain('object.metadata.ownerReferences[0].uid == params.metadata.uid');
      for (const field of [
        'c.command',
        'c.args',
        'c.workingDir',
        'c.securityContext.capabilities',
        'c.securityContext.privileged',
        'c.securityContext.runAsUser',
        'c.securityContext.allowPrivilegeEscalation',
        'p.hostPort',
        'c.lifecycle.postStart.exec.command',
        'c.lifecycle.preStop.exec.command',
        'c.livenessProbe.exec.command',
        'c.readinessProbe.exec.command',
        'c.startupProbe.exec.command',
        'c.volumeMounts',
        'e.valueFrom.secretKeyRef',
        'f.secretRef',
        'object.spec.securityContext.runAsUser',
        'object.spec.nodeName',
        'object.spec.runtimeClassName',
        'object.spec.hostPID',
        'object.spec.hostIPC',
        'variables.hostNetwork',
        'object.spec.shareProcessNamespace',
        'object.spec.hostUsers',
        '!has(object.spec.ephemeralContainers)',
        'object.spec.initContainers',
        'v.hostPath.path',
        'v.secret.secretName',
        'v.configMap.name',
        'v.persistentVolumeClaim.claimName',
      ])
        expect(all, `${name} compares ${field}`).toContain(field);
    }
  });

  it.each(['khrun-tick-job-template', 'khrun-sync-cronjob-template'])(
    '%s compares the whole template: every container and pod-spec field',
    (name) => {
      const all = cel(name);
      for (const f of ['lifecycle', 'livenessProbe', 'readinessProbe', 'startupProbe', 'workingDir', 'ports'])
        expect(all).toContain(`has(c.${f}) == has(t.${f}) && (!has(c.${f}) || c.${f} == t.${f})`);
      for (const f of [
        'nodeName',
        'runtimeClassName',
        'volumes',
        'initContainers',
        'securityContext',
        'hostPID',
      ])
        expect(all).toContain(`has(variables.pod.${f}) == has(variables.template.${f})`);
    },
  );

  it('refuses khrun any spec change of a check (a khjob: only its phase)', () => {
    const all = cel('khrun-check-specs');
    expect(all).toContain("request.resource.resource != 'khjobs' ? object.spec == oldObject.spec");
    for (const f of ['podSpec', 'timeout', 'extraAnnotations', 'extraLabels'])
      expect(all).toContain(`object.spec.${f} == oldObject.spec.${f}`);
    expect(all).not.toContain('object.spec.phase');
    // Nor a check's notification policy or silence (people's: khrun silence).
    expect(all).toContain("object.metadata.annotations.filter(k, k.startsWith('notify.khrun.dev/'))");
    const who = policy('khrun-check-specs').spec.matchConditions?.[0]?.expression ?? '';
    for (const sa of ['khrun-tick', 'khrun-sync', 'khrun-(runner|server)']) expect(who).toContain(sa);
  });

  it('lets sync change and delete only the CronJobs it made', () => {
    expect(cel('khrun-sync-cronjob-removal')).toContain(
      "oldObject.metadata.labels['app.kubernetes.io/managed-by'] == 'khrun'",
    );
    expect(cel('khrun-sync-cronjobs')).toContain("request.operation != 'UPDATE'");
  });
});

describe("the serve component: signed reports only, the key from the user's Secret", () => {
  const deployment = named('Deployment', 'khrun-server') as unknown as {
    spec: {
      template: {
        spec: {
          volumes?: Array<{ name: string; secret?: { secretName: string; items?: unknown[] } }>;
          containers: Array<{
            env?: Array<{ name: string; value?: string }>;
            volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
            securityContext?: { readOnlyRootFilesystem?: boolean };
          }>;
        };
      };
    };
  };
  const pod = deployment.spec.template.spec;
  const server = pod.containers[0]!;

  it('mounts the Secret khrun-report-key read-only and names its file in KHRUN_REPORT_KEY_FILE', () => {
    expect(pod.volumes).toEqual([
      {
        name: 'report-key',
        secret: { secretName: 'khrun-report-key', items: [{ key: 'key', path: 'key' }] },
      },
    ]);
    expect(server.volumeMounts).toEqual([
      { name: 'report-key', mountPath: '/var/run/khrun-report-key', readOnly: true },
    ]);
    expect(server.securityContext?.readOnlyRootFilesystem).toBe(true);
    const env = new Map((server.env ?? []).map((e) => [e.name, e.value]));
    expect(env.get('KHRUN_REPORT_KEY_FILE')).toBe('/var/run/khrun-report-key/key');
    expect(env.has('KHRUN_REPORT_KEY')).toBe(false);
    expect(env.has('KHRUN_ALLOW_UNSIGNED_REPORTS')).toBe(false);
    expect(env.has('KHRUN_REPORT_UNSIGNED')).toBe(false);
  });

  it('ships no Secret of its own (kustomize cannot make a random key) and says how to create it', () => {
    expect(byKind('Secret')).toEqual([]);
    expect(read('infra/deploy/components/serve/kustomization.yaml')).toContain(
      'kubectl -n khrun create secret generic khrun-report-key --from-literal=key="$(openssl rand -hex 32)"',
    );
  });
});

describe('the chart is the source of the kustomization', () => {
  const templates = 'infra/helm/khrun/templates';
  it.each([
    ['admission.yaml', 'infra/deploy/admission.yaml'],
    ['sync.yaml', 'infra/deploy/components/sync/sync.yaml'],
    ['runner.yaml', 'infra/deploy/runner.yaml'],
    ['tick.yaml', 'infra/deploy/tick.yaml'],
  ])('every policy and role of %s is in its template source', (template, deployed) => {
    const source = read(`${templates}/${template}`);
    expect(read(deployed)).toContain(`# Generated from ${templates}/${template}`);
    for (const o of loadAll(read(deployed)) as K8sObject[])
      if (o && /Policy|Role/.test(o.kind))
        expect(source, o.metadata.name).toContain(`name: ${o.metadata.name}`);
  });

  it('binds the runner and sync per namespace when the chart knows the namespaces', () => {
    expect(read(`${templates}/runner.yaml`)).toMatch(
      /range \.Values\.namespaces[\s\S]*kind: RoleBinding[\s\S]*name: khrun-runner/,
    );
    expect(read(`${templates}/sync.yaml`)).toMatch(
      /range \.Values\.namespaces[\s\S]*kind: RoleBinding[\s\S]*name: khrun-sync-cronjobs/,
    );
  });

  it('compares every field the template helpers list, and they list the security-relevant ones', () => {
    const helpers = read(`${templates}/_helpers.tpl`);
    const list = (name: string) =>
      new RegExp(`define "${name}" -}}\\n([^\\n]+)`).exec(helpers)?.[1]?.split(' ') ?? [];
    expect(list('khrun.podSpecFields')).toEqual(
      expect.arrayContaining([
        'hostNetwork',
        'hostPID',
        'hostIPC',
        'nodeName',
        'runtimeClassName',
        'volumes',
      ]),
    );
    expect(list('khrun.containerFields')).toEqual(
      expect.arrayContaining(['command', 'args', 'lifecycle', 'livenessProbe', 'securityContext', 'ports']),
    );
    expect(list('khrun.podSpecFields')).not.toContain('containers');
    expect(list('khrun.containerFields')).not.toContain('env');
    expect(load(read('infra/helm/khrun/values.yaml'))).toMatchObject({ admissionPolicy: { enabled: true } });
  });
});
