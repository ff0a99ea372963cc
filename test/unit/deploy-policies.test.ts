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
  // The serve component's Deployment (the server with reports: a patch over the base's) before the base's,
  // which holds the server's RBAC and Service and takes no reports.
  'infra/deploy/components/serve/serve.yaml',
  'infra/deploy/serve.yaml',
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
        'comcast.github.io khchecks: get,list',
        'comcast.github.io khjobs: get,update',
        'comcast.github.io khstates: create,delete,get,list,update,watch',
        'kuberhealthy.github.io healthchecks: get,list,update,watch',
        'kuberhealthy.github.io healthchecks/status,healthchecks/finalizers: update',
        'core pods: create,delete,get,list,watch',
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
        'core configmaps: get [khrun-notifications]',
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

  it('grants no role pods/eviction: an eviction names only the pod, so no policy could hold it', () => {
    for (const role of [...byKind('ClusterRole'), ...byKind('Role')])
      for (const rule of role.rules ?? [])
        expect(rule.resources, `${role.kind} ${role.metadata.name}`).not.toContain('pods/eviction');
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
    'khrun-runner-node-access': { ops: ['CREATE'], resources: ['pods'], validations: 6 },
    'khrun-runner-checker-credentials': { ops: ['CREATE'], resources: ['pods'], validations: 6 },
    'khrun-runner-checker-pod-spec': { ops: ['CREATE'], resources: ['pods'], validations: 6 },
    'khrun-runner-khjob-pod-spec': { ops: ['CREATE'], resources: ['pods'], validations: 6 },
    'khrun-runner-healthcheck-pod-spec': { ops: ['CREATE'], resources: ['pods'], validations: 6 },
    'khrun-runner-events': { ops: ['CREATE', 'UPDATE'], resources: ['events'], validations: 1 },
    'khrun-runner-pod-removal': {
      ops: ['DELETE', 'CREATE'],
      resources: ['pods', 'pods/eviction'],
      validations: 3,
    },
    'khrun-tick-jobs': { ops: ['CREATE', 'UPDATE'], resources: ['jobs'], validations: 4 },
    'khrun-tick-job-template': { ops: ['CREATE', 'UPDATE'], resources: ['jobs'], validations: 2 },
    'khrun-check-specs': {
      ops: ['UPDATE', 'UPDATE'],
      resources: ['khchecks', 'khjobs', 'healthchecks'],
      validations: 3,
    },
    'khrun-sync-cronjobs': { ops: ['CREATE', 'UPDATE'], resources: ['cronjobs'], validations: 6 },
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
      '!has(v.gitRepo)',
      'hostPort',
      'privileged',
      'capabilities.add',
      'procMount',
      "object.spec.securityContext.seccompProfile.type != 'Unconfined'",
      "c.securityContext.seccompProfile.type != 'Unconfined'",
      "object.spec.securityContext.appArmorProfile.type != 'Unconfined'",
      "c.securityContext.appArmorProfile.type != 'Unconfined'",
      'container.apparmor.security.beta.kubernetes.io/',
      'seccomp.security.alpha.kubernetes.io/pod',
      'seLinuxOptions.type in variables.baselineSELinuxTypes',
      'seLinuxOptions.user',
      'seLinuxOptions.role',
      'hostProcess',
      'sysctls.all(s, s.name in variables.safeSysctls)',
      'object.spec.nodeName',
      'node-role.kubernetes.io/control-plane',
      "t.key != ''",
      "priorityClassName.startsWith('system-')",
      'object.spec.priority <= 1000000000',
    ])
      expect(rules, field).toContain(field);
    // Each validation is lifted by the namespace label alone, which khrun's identities cannot set, and
    // says the command that sets it.
    for (const v of policy('khrun-runner-node-access').spec.validations)
      expect(v.expression).toMatch(/^variables\.opened \|\|/);
    const spec = JSON.stringify(policy('khrun-runner-node-access').spec);
    expect(spec).toContain("namespaceObject.metadata.labels['khrun.dev/privileged-checks'] == 'allowed'");
    expect(spec).toContain(
      "kubectl label namespace ' + request.namespace + ' khrun.dev/privileged-checks=allowed",
    );
  });

  it("keeps every checker pod off its namespace's credentials unless an admin labelled the namespace", () => {
    const p = policy('khrun-runner-checker-credentials');
    const spec = JSON.stringify(p.spec);
    expect(spec).toContain("namespaceObject.metadata.labels['khrun.dev/checker-credentials'] == 'allowed'");
    expect(spec).toContain(
      "kubectl label namespace ' + request.namespace + ' khrun.dev/checker-credentials=allowed",
    );
    const vars = Object.fromEntries(
      (p.spec as unknown as { variables: Array<{ name: string; expression: string }> }).variables.map((v) => [
        v.name,
        v.expression,
      ]),
    );
    // Volumes: an allow-list of kinds (a Secret, PVC, CSI or network volume is not on it), projected
    // sources without secrets or tokens for other audiences.
    for (const kind of ['configMap', 'downwardAPI', 'emptyDir', 'image', 'hostPath', 'projected'])
      expect(vars.dataVolumes).toContain(`has(v.${kind})`);
    for (const kind of ['secret', 'persistentVolumeClaim', 'csi', 'nfs', 'ephemeral', 'iscsi'])
      expect(vars.dataVolumes).not.toContain(`has(v.${kind})`);
    expect(vars.dataVolumes).toContain("s.serviceAccountToken.audience == ''");
    expect(vars.dataVolumes).not.toContain('has(s.secret)');
    expect(vars.secretEnv).toContain('e.valueFrom.secretKeyRef');
    expect(vars.secretEnv).toContain('f.secretRef');
    expect(vars.secretEnv).toContain('variables.containers');
    expect(vars.containers).toContain('object.spec.initContainers');
    for (const label of [
      'kuberhealthy-check-name',
      'kuberhealthy-run-id',
      'app',
      'healthcheck',
      'kh-run-uuid',
    ])
      expect(vars.otherLabels).toContain(`'${label}'`);
    const rules = cel('khrun-runner-checker-credentials');
    expect(rules).toContain("variables.serviceAccount == 'default'");
    expect(rules).toContain('object.spec.resourceClaims');
    // Every rule but the report key's is lifted by the label; the report key's never is.
    const [keyRule, ...lifted] = [...p.spec.validations].reverse();
    for (const v of lifted) expect(v.expression).toMatch(/^variables\.opened \|\|/);
    expect(keyRule!.expression).not.toContain('variables.opened');
    expect(keyRule!.expression).toContain("request.namespace != 'khrun'");
    expect(vars.reportKey).toBe("'khrun-report-key'");
    for (const ref of [
      'v.secret.secretName',
      's.secret.name',
      'e.valueFrom.secretKeyRef.name',
      'f.secretRef.name',
      'v.csi.nodePublishSecretRef.name',
    ])
      expect(keyRule!.expression).toContain(ref);
  });

  it("records the runner's Events only about checks of their namespace", () => {
    const rule = cel('khrun-runner-events');
    expect(rule).toContain("object.involvedObject.kind in ['KuberhealthyCheck', 'KuberhealthyJob']");
    expect(rule).toContain("object.involvedObject.kind == 'HealthCheck'");
    expect(rule).toContain('object.involvedObject.namespace == request.namespace');
  });

  it('refuses the runner every eviction, and deletes of pods that are not checker pods khrun made', () => {
    const [system, eviction, deletes] = policy('khrun-runner-pod-removal').spec.validations;
    expect(system!.expression).toContain("'kube-system', 'kube-public', 'kube-node-lease'");
    // Unconditional: even a binding an admin adds elsewhere cannot give khrun's runner an eviction.
    expect(eviction!.expression).toBe("!(has(request.subResource) && request.subResource == 'eviction')");
    expect(deletes!.expression).toMatch(/^request\.operation != 'DELETE' \|\| \(/);
    expect(deletes!.expression).toContain("o.kind in ['KuberhealthyCheck', 'KuberhealthyJob']");
    expect(deletes!.expression).toContain("'khrun.dev/checker-pod' in oldObject.metadata.annotations");
  });

  it.each([
    'khrun-runner-checker-pod-spec',
    'khrun-runner-khjob-pod-spec',
    'khrun-runner-healthcheck-pod-spec',
  ])(
    '%s: a parameter the pod does not name or own stops at the match conditions, by the test its validations use',
    (name) => {
      const p = policy(name);
      const vars = Object.fromEntries(
        (p.spec as unknown as { variables: Array<{ name: string; expression: string }> }).variables.map(
          (v) => [v.name, v.expression],
        ),
      );
      const conditions = (p.spec.matchConditions ?? []) as Array<{ name: string; expression: string }>;
      // The identity first (another's request stops there), then the parameter: variables.mine with the
      // check's label inlined (match conditions see no variables), neither looser nor stricter.
      expect(conditions.map((c) => c.name)).toEqual(['khrun-runner', 'mine']);
      expect(conditions[1]!.expression).toBe(vars.mine!.replace('variables.check', vars.check!));
    },
  );

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
        'object.spec.activeDeadlineSeconds',
        'object.spec.terminationGracePeriodSeconds',
        'object.spec.hostname',
        'object.spec.subdomain',
        'object.spec.hostAliases',
        'object.spec.dnsConfig',
        'object.spec.dnsPolicy',
        'object.spec.tolerations',
        'object.spec.os',
        'object.spec.resourceClaims',
        'object.spec.schedulingGates',
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
    // Nor its owners or finalizers: a dangling owner reference has the garbage collector delete the check.
    expect(all).toContain('object.metadata.ownerReferences');
    expect(all).toContain('object.metadata.finalizers');
  });

  it.each(['khrun-tick-jobs', 'khrun-sync-cronjobs'])(
    '%s: one runner pod, once, with no unconfining annotation',
    (name) => {
      const all = cel(name);
      for (const f of [
        'variables.job.parallelism <= 1',
        'variables.job.completions <= 1',
        'variables.job.backoffLimit == 0',
        'variables.job.manualSelector',
        'container.apparmor.security.beta.kubernetes.io/',
      ])
        expect(all).toContain(f);
    },
  );

  it('lets sync change and delete only the CronJobs it made', () => {
    expect(cel('khrun-sync-cronjob-removal')).toContain(
      "oldObject.metadata.labels['app.kubernetes.io/managed-by'] == 'khrun'",
    );
    expect(cel('khrun-sync-cronjobs')).toContain("request.operation != 'UPDATE'");
  });
});

describe('the parameter keeper (kubernetes/kubernetes#130887): outlives an uninstall, refuses nothing', () => {
  const keeper = loadAll(read('infra/parameter-keeper/keeper.yaml')) as Array<
    K8sObject & { metadata: { annotations?: Record<string, string> } }
  >;
  const template = read('infra/helm/khrun/templates/parameter-keeper.yaml');

  it('is a policy and its binding, both named khrun-parameter-keeper and kept by helm uninstall', () => {
    expect(keeper.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ValidatingAdmissionPolicy/khrun-parameter-keeper',
      'ValidatingAdmissionPolicyBinding/khrun-parameter-keeper',
    ]);
    for (const o of keeper) expect(o.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    // Rendered with the other policies: only where they are (admissionPolicy.enabled), and only when no
    // keeper of another release or of kubectl is there (lookup: helm would refuse to adopt it).
    expect(template).toContain('{{- if and .Values.admissionPolicy.enabled $ours }}');
    expect(template).toMatch(
      /lookup "admissionregistration\.k8s\.io\/v1" \$kind "" "khrun-parameter-keeper"/,
    );
  });

  it('names PodTemplate as its parameter kind and can refuse nothing', () => {
    const [policy, binding] = keeper as unknown as [
      Policy,
      { spec: { validationActions: string[]; paramRef: Record<string, string> } },
    ];
    expect(policy.spec.paramKind).toEqual({ apiVersion: 'v1', kind: 'PodTemplate' });
    expect(policy.spec.failurePolicy).toBe('Ignore');
    expect(policy.spec.validations.map((v) => v.expression)).toEqual(['true']);
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['podtemplates'] },
    ]);
    expect(binding.spec.validationActions).toEqual(['Audit']);
    expect(binding.spec.paramRef).toEqual({ name: 'khrun-runner', parameterNotFoundAction: 'Allow' });
  });

  it('is not part of infra/deploy, so `kubectl delete -k infra/deploy` leaves it', () => {
    const deploy = load(read('infra/deploy/kustomization.yaml')) as { resources: string[] };
    expect(deploy.resources.filter((r) => r.includes('keeper'))).toEqual([]);
    expect(read('infra/parameter-keeper/kustomization.yaml')).toMatch(/resources:\n {2}- keeper\.yaml\n/);
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

  it("the base's server (without the component) takes no reports and mounts no key", () => {
    const base = (loadAll(read('infra/deploy/serve.yaml')) as K8sObject[]).find(
      (o) => o?.kind === 'Deployment',
    ) as unknown as typeof deployment;
    const container = base.spec.template.spec.containers[0] as typeof server & { args: string[] };
    expect(container.args).toContain('--no-reports');
    expect(base.spec.template.spec.volumes).toBeUndefined();
    expect(container.volumeMounts).toBeUndefined();
    expect((container.env ?? []).map((e) => e.name)).toEqual(['POD_NAME']);
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
