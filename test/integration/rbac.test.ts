import {
  AdmissionregistrationV1Api,
  AuthorizationV1Api,
  BatchV1Api,
  CertificatesV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_KIND,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { statusCodeOf } from '../../lib/kube/errors.ts';
import { KH_GROUP, KH_VERSION } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import {
  applyDeploy,
  buildTestBundles,
  DEPLOY_NAMESPACE,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './helpers/deploy.ts';
import { goCheckerV3Binary } from './helpers/go-checker-v3.ts';
import { outcomeOf, runKhrun } from './helpers/khrun.ts';

// Each component's ServiceAccount, with a token from the TokenRequest API, against the real authorizer:
// what its ClusterRole/Role allows (SelfSubjectAccessReview), and real requests it must be denied (403).
// These are the direct verbs only: what an allowed verb can be used for indirectly (a pod in kube-system, a
// Job or CronJob as another ServiceAccount) is refused by the admission policies, which
// admission-policy.test.ts tries route by route.

const admin = adminKubeConfig();
const ns = DEPLOY_NAMESPACE;
const OTHER = 'default';
type Verb = [
  verb: string,
  resource: string,
  namespace: string,
  extra?: { group?: string; name?: string; subresource?: string },
];
const kh = { group: KH_GROUP };
const v3 = { group: 'kuberhealthy.github.io' };
const rbac = { group: 'rbac.authorization.k8s.io' };
const admissionreg = { group: 'admissionregistration.k8s.io' };
const CLUSTER = '';

/**
 * What no khrun identity may do: the routes to a node, to other identities and to the rules themselves
 * (red team, issue 23). Each is an RBAC denial; the tests below also send several for real.
 */
const DENIED_TO_ALL: Verb[] = [
  // A running pod changed, entered or reached: a new image, an ephemeral container, a shell, a tunnel.
  ['update', 'pods', OTHER],
  ['patch', 'pods', OTHER],
  ['update', 'pods', OTHER, { subresource: 'status' }],
  ['update', 'pods', OTHER, { subresource: 'ephemeralcontainers' }],
  ['patch', 'pods', OTHER, { subresource: 'ephemeralcontainers' }],
  ['create', 'pods', OTHER, { subresource: 'exec' }],
  ['get', 'pods', OTHER, { subresource: 'exec' }],
  ['create', 'pods', OTHER, { subresource: 'attach' }],
  ['create', 'pods', OTHER, { subresource: 'portforward' }],
  ['get', 'pods', OTHER, { subresource: 'proxy' }],
  ['create', 'pods', OTHER, { subresource: 'binding' }],
  ['deletecollection', 'pods', OTHER],
  // An eviction names only the pod, so no admission policy could hold it: khrun deletes its checker pods.
  ['create', 'pods', OTHER, { subresource: 'eviction' }],
  ['create', 'pods', 'kube-system', { subresource: 'eviction' }],
  ['get', 'nodes', CLUSTER, { subresource: 'proxy' }],
  ['patch', 'nodes', CLUSTER],
  // Other identities' credentials and data.
  ['create', 'serviceaccounts', ns, { subresource: 'token', name: 'khrun-server' }],
  ['create', 'serviceaccounts', ns, { subresource: 'token', name: 'khrun-runner' }],
  ['create', 'serviceaccounts', OTHER, { subresource: 'token' }],
  ['get', 'secrets', OTHER],
  ['list', 'secrets', OTHER],
  ['watch', 'secrets', OTHER],
  ['get', 'configmaps', OTHER],
  ['list', 'configmaps', OTHER],
  ['update', 'configmaps', OTHER],
  ['impersonate', 'users', CLUSTER],
  ['impersonate', 'groups', CLUSTER],
  ['impersonate', 'serviceaccounts', OTHER],
  ['create', 'certificatesigningrequests', CLUSTER, { group: 'certificates.k8s.io' }],
  [
    'update',
    'certificatesigningrequests',
    CLUSTER,
    { group: 'certificates.k8s.io', subresource: 'approval' },
  ],
  // Rights and the rules that narrow them.
  ['create', 'rolebindings', OTHER, rbac],
  ['create', 'clusterrolebindings', CLUSTER, rbac],
  ['bind', 'clusterroles', CLUSTER, rbac],
  ['escalate', 'clusterroles', CLUSTER, rbac],
  ['update', 'validatingadmissionpolicies', CLUSTER, admissionreg],
  ['delete', 'validatingadmissionpolicybindings', CLUSTER, admissionreg],
  ['create', 'mutatingwebhookconfigurations', CLUSTER, admissionreg],
  ['update', 'customresourcedefinitions', CLUSTER, { group: 'apiextensions.k8s.io' }],
  ['patch', 'namespaces', CLUSTER, { name: OTHER }],
  ['update', 'namespaces', CLUSTER],
  // The runner template every runner Job copies, and other workloads.
  ['update', 'podtemplates', ns, { name: 'khrun-runner' }],
  ['patch', 'podtemplates', ns, { name: 'khrun-runner' }],
  ['create', 'podtemplates', ns],
  ['create', 'deployments', OTHER, { group: 'apps' }],
  ['create', 'daemonsets', OTHER, { group: 'apps' }],
  ['update', 'jobs', ns, { group: 'batch' }],
  ['create', 'leases', OTHER, { group: 'coordination.k8s.io' }],
  ['create', 'events', OTHER, { group: 'events.k8s.io' }],
  ['delete', 'khchecks', OTHER, kh],
  ['delete', 'healthchecks', OTHER, v3],
];

const MATRIX: Record<string, { allowed: Verb[]; denied: Verb[] }> = {
  'khrun-runner': {
    allowed: [
      ['get', 'khchecks', OTHER, kh],
      ['get', 'khjobs', OTHER, kh],
      ['update', 'khjobs', OTHER, kh],
      ['get', 'khstates', OTHER, kh],
      ['create', 'khstates', OTHER, kh],
      ['update', 'khstates', OTHER, kh],
      ['delete', 'khstates', OTHER, kh],
      ['watch', 'khstates', OTHER, kh],
      ['create', 'pods', OTHER],
      ['watch', 'pods', OTHER],
      ['delete', 'pods', OTHER],
      ['create', 'events', OTHER],
      ['get', 'configmaps', OTHER, { name: 'khrun-notifications' }],
      ['get', 'healthchecks', OTHER, v3],
      ['list', 'healthchecks', OTHER, v3],
      ['watch', 'healthchecks', OTHER, v3],
      ['update', 'healthchecks', OTHER, v3],
      ['update', 'healthchecks', OTHER, { ...v3, subresource: 'status' }],
      ['update', 'healthchecks', OTHER, { ...v3, subresource: 'finalizers' }],
      // A batch reads its namespace's khchecks in one list (lib/kube/shared-reads.ts).
      ['list', 'khchecks', OTHER, kh],
    ],
    denied: [
      ['create', 'healthchecks', OTHER, v3],
      ['delete', 'healthchecks', OTHER, v3],
      ['patch', 'healthchecks', OTHER, v3],
      ['update', 'khchecks', OTHER, kh],
      ['list', 'khjobs', OTHER, kh],
      ['delete', 'khjobs', OTHER, kh],
      ['create', 'jobs', ns, { group: 'batch' }],
      ['get', 'secrets', ns],
      ['get', 'configmaps', OTHER, { name: 'another-configmap' }],
      ['list', 'configmaps', OTHER],
      ['update', 'pods', OTHER],
      ['create', 'pods', OTHER, { subresource: 'exec' }],
      // Logs are the server's (GET /api/logs), never the runner's.
      ['get', 'pods', OTHER, { subresource: 'log' }],
    ],
  },
  'khrun-tick': {
    allowed: [
      ['list', 'khchecks', OTHER, kh],
      ['list', 'khjobs', OTHER, kh],
      ['list', 'khstates', OTHER, kh],
      ['update', 'khstates', OTHER, kh],
      ['create', 'khstates', OTHER, kh],
      ['create', 'jobs', ns, { group: 'batch' }],
      ['get', 'podtemplates', ns, { name: 'khrun-runner' }],
      // The outbox sweep's holds: a namespace's notification defaults, that ConfigMap only.
      ['get', 'configmaps', OTHER, { name: 'khrun-notifications' }],
    ],
    denied: [
      ['get', 'configmaps', OTHER, { name: 'another-configmap' }],
      ['list', 'configmaps', OTHER],
      ['create', 'jobs', OTHER, { group: 'batch' }],
      ['delete', 'jobs', ns, { group: 'batch' }],
      ['create', 'pods', ns],
      ['delete', 'khstates', OTHER, kh],
      ['update', 'khchecks', OTHER, kh],
      ['update', 'khjobs', OTHER, kh],
      ['get', 'podtemplates', ns, { name: 'other-template' }],
      ['get', 'secrets', ns],
      ['get', 'pods', OTHER, { subresource: 'log' }],
    ],
  },
  // With the report key (the serve component mounts it) the server takes only signed reports, which name
  // their run: it lists no pods.
  'khrun-server': {
    allowed: [
      ['get', 'khstates', OTHER, kh],
      ['update', 'khstates', OTHER, kh],
      ['watch', 'khstates', OTHER, kh],
      ['list', 'healthchecks', OTHER, v3],
      ['watch', 'healthchecks', OTHER, v3],
      // POST /check: the HealthCheck the run names, the report in its status and a khrun.dev annotation.
      ['get', 'healthchecks', OTHER, v3],
      ['update', 'healthchecks', OTHER, v3],
      ['update', 'healthchecks', OTHER, { ...v3, subresource: 'status' }],
      // GET /api/logs: the log tail of a check's last run, its pod named from the state (no pod read).
      ['get', 'pods', OTHER, { subresource: 'log' }],
    ],
    denied: [
      ['delete', 'healthchecks', OTHER, v3],
      ['create', 'healthchecks', OTHER, v3],
      ['update', 'healthchecks', OTHER, { ...v3, subresource: 'finalizers' }],
      ['list', 'pods', OTHER],
      ['list', 'pods', ns],
      ['get', 'pods', OTHER],
      ['watch', 'pods', OTHER],
      ['create', 'pods', OTHER],
      ['delete', 'pods', OTHER],
      ['get', 'khchecks', OTHER, kh],
      ['delete', 'khstates', OTHER, kh],
      ['create', 'khstates', OTHER, kh],
      ['get', 'secrets', ns],
      ['get', 'secrets', ns, { name: 'khrun-report-key' }],
    ],
  },
  'khrun-sync': {
    allowed: [
      ['list', 'khchecks', OTHER, kh],
      ['watch', 'khchecks', OTHER, kh],
      ['create', 'cronjobs', OTHER, { group: 'batch' }],
      ['patch', 'cronjobs', OTHER, { group: 'batch' }],
      ['delete', 'cronjobs', OTHER, { group: 'batch' }],
      ['get', 'podtemplates', ns, { name: 'khrun-runner' }],
    ],
    denied: [
      ['create', 'jobs', OTHER, { group: 'batch' }],
      ['create', 'pods', OTHER],
      ['update', 'khstates', OTHER, kh],
      ['update', 'khchecks', OTHER, kh],
      ['get', 'secrets', ns],
    ],
  },
};

const clients = new Map<string, KubeConfig>();

beforeAll(async () => {
  const dist = await buildTestBundles();
  // With the serve component applyDeploy creates the report key Secret the server mounts.
  await applyDeploy({ name: 'rbac', distDir: dist, components: ['serve', 'sync'], suspend: ['khrun-sync'] });
  for (const sa of Object.keys(MATRIX)) clients.set(sa, await serviceAccountKubeConfig(admin, ns, sa));
}, 180_000);

async function can(kc: KubeConfig, [verb, resource, namespace, extra]: Verb): Promise<boolean> {
  const review = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: {
      spec: {
        resourceAttributes: {
          verb,
          resource,
          namespace,
          group: extra?.group ?? '',
          name: extra?.name,
          subresource: extra?.subresource,
        },
      },
    },
  });
  return review.status?.allowed === true;
}

/** The HTTP status of a request the ServiceAccount must not be allowed to make. */
async function statusOf(request: Promise<unknown>): Promise<number | undefined> {
  try {
    await request;
    return 200;
  } catch (error) {
    return statusCodeOf(error);
  }
}

describe('least privilege per component (TokenRequest tokens, real authorizer)', () => {
  it.each(Object.keys(MATRIX))('%s is allowed exactly what it needs', async (sa) => {
    const kc = clients.get(sa)!;
    for (const attrs of MATRIX[sa]!.allowed)
      expect(await can(kc, attrs), `${sa} ${JSON.stringify(attrs)}`).toBe(true);
    for (const attrs of MATRIX[sa]!.denied)
      expect(await can(kc, attrs), `${sa} ${JSON.stringify(attrs)}`).toBe(false);
  });

  it.each(Object.keys(MATRIX))(
    '%s is denied every route to a node, another identity or the rules',
    async (sa) => {
      const kc = clients.get(sa)!;
      for (const attrs of DENIED_TO_ALL)
        expect(await can(kc, attrs), `${sa} ${JSON.stringify(attrs)}`).toBe(false);
    },
  );

  it.each(Object.keys(MATRIX))(
    '%s is denied them for real (403): exec, evictions, ephemeral containers, tokens, bindings, impersonation, the template',
    async (sa) => {
      const kc = clients.get(sa)!;
      const core = kc.makeApiClient(CoreV1Api);
      const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      const requests: Array<[string, () => Promise<unknown>]> = [
        [
          'pod patch',
          () =>
            core.patchNamespacedPod(
              { namespace: OTHER, name: 'x', body: { metadata: { labels: { a: 'b' } } } },
              merge,
            ),
        ],
        [
          'ephemeral containers',
          () =>
            core.patchNamespacedPodEphemeralcontainers(
              {
                namespace: OTHER,
                name: 'x',
                body: { spec: { ephemeralContainers: [{ name: 'd', image: 'busybox' }] } },
              },
              setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
            ),
        ],
        ['exec', () => core.connectPostNamespacedPodExec({ namespace: OTHER, name: 'x', command: 'id' })],
        [
          'an eviction',
          () =>
            core.createNamespacedPodEviction({
              namespace: OTHER,
              name: 'x',
              body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'x', namespace: OTHER } },
            }),
        ],
        ['pod proxy', () => core.connectGetNamespacedPodProxy({ namespace: OTHER, name: 'x' })],
        ['node proxy', () => core.connectGetNodeProxy({ name: 'x' })],
        [
          "khrun-server's token",
          () =>
            core.createNamespacedServiceAccountToken({
              namespace: ns,
              name: 'khrun-server',
              body: { spec: { audiences: [] } },
            }),
        ],
        ['secrets', () => core.listNamespacedSecret({ namespace: OTHER })],
        [
          'impersonating the admin',
          () =>
            core.listNamespacedSecret({ namespace: OTHER }, setHeaderOptions('Impersonate-User', 'admin')),
        ],
        [
          'a RoleBinding to cluster-admin',
          () =>
            kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
              namespace: OTHER,
              body: {
                metadata: { name: 'x' },
                roleRef: {
                  apiGroup: 'rbac.authorization.k8s.io',
                  kind: 'ClusterRole',
                  name: 'cluster-admin',
                },
                subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }],
              },
            }),
        ],
        [
          'a certificate signing request',
          () =>
            kc.makeApiClient(CertificatesV1Api).createCertificateSigningRequest({
              body: {
                metadata: { name: 'x' },
                spec: {
                  request: 'eA==',
                  signerName: 'kubernetes.io/kube-apiserver-client',
                  usages: ['client auth'],
                },
              },
            }),
        ],
        [
          "the admission policies' bindings",
          () =>
            kc
              .makeApiClient(AdmissionregistrationV1Api)
              .deleteValidatingAdmissionPolicyBinding({ name: 'khrun-runner-checker-credentials' }),
        ],
        [
          'the runner template',
          () =>
            core.patchNamespacedPodTemplate(
              {
                namespace: ns,
                name: 'khrun-runner',
                body: { template: { spec: { serviceAccountName: 'default' } } },
              },
              merge,
            ),
        ],
        [
          'a namespace label',
          () =>
            core.patchNamespace(
              { name: OTHER, body: { metadata: { labels: { 'khrun.dev/checker-credentials': 'allowed' } } } },
              merge,
            ),
        ],
      ];
      for (const [what, request] of requests) expect(await statusOf(request()), `${sa}: ${what}`).toBe(403);
    },
  );

  it('the runner is denied Jobs, secrets and khcheck changes for real (403)', async () => {
    const kc = clients.get('khrun-runner')!;
    expect(
      await statusOf(kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns, body: job('x') })),
    ).toBe(403);
    expect(await statusOf(kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns }))).toBe(403);
    expect(
      await statusOf(
        kc.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
          group: KH_GROUP,
          version: KH_VERSION,
          plural: 'khchecks',
          namespace: ns,
          name: 'x',
        }),
      ),
    ).toBe(403);
  });

  it('the tick is denied pods, Jobs outside its namespace and khstate deletion for real (403)', async () => {
    const kc = clients.get('khrun-tick')!;
    expect(
      await statusOf(kc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: ns, body: pod('x') })),
    ).toBe(403);
    expect(
      await statusOf(kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: OTHER, body: job('x') })),
    ).toBe(403);
    expect(
      await statusOf(
        kc.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
          group: KH_GROUP,
          version: KH_VERSION,
          plural: 'khstates',
          namespace: ns,
          name: 'x',
        }),
      ),
    ).toBe(403);
    expect(
      await statusOf(kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: ns, name: 'x' })),
    ).toBe(403);
  });

  it('the server is denied listing pods, creating them, its key Secret and khcheck reads for real (403)', async () => {
    const kc = clients.get('khrun-server')!;
    const core = kc.makeApiClient(CoreV1Api);
    expect(await statusOf(core.listNamespacedPod({ namespace: OTHER }))).toBe(403);
    expect(await statusOf(core.listPodForAllNamespaces())).toBe(403);
    expect(await statusOf(core.createNamespacedPod({ namespace: OTHER, body: pod('x') }))).toBe(403);
    // The key reaches the server as a mounted file only (the kubelet reads the Secret), never by its token.
    expect(await statusOf(core.readNamespacedSecret({ namespace: ns, name: 'khrun-report-key' }))).toBe(403);
    expect(
      await statusOf(
        kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
          group: KH_GROUP,
          version: KH_VERSION,
          plural: 'khchecks',
          namespace: ns,
        }),
      ),
    ).toBe(403);
  });

  it('sync is denied Jobs, pods and khstate writes for real (403)', async () => {
    const kc = clients.get('khrun-sync')!;
    expect(
      await statusOf(kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: OTHER, body: job('x') })),
    ).toBe(403);
    expect(
      await statusOf(kc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: OTHER, body: pod('x') })),
    ).toBe(403);
    expect(
      await statusOf(
        kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
          group: KH_GROUP,
          version: KH_VERSION,
          plural: 'khstates',
          namespace: ns,
        }),
      ),
    ).toBe(403);
  });
});

function pod(name: string) {
  return { metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox', command: ['true'] }] } };
}
function job(name: string) {
  return {
    metadata: { name },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
  };
}

describe('the runner runs a Kuberhealthy v3 HealthCheck with only its own rights', () => {
  it('khrun run --healthcheck as khrun-runner: v3 checker pod (blockOwnerDeletion), report, status, removal', async () => {
    // OwnerReferencesPermissionEnforcement is on in the local cluster (infra/devkit/src/local/control-plane.ts):
    // the pod's blockOwnerDeletion is refused unless the runner may update healthchecks/finalizers.
    const checks = await freshNamespace(admin, 'rbac-hc');
    try {
      const checker = await goCheckerV3Binary();
      const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
      const custom = admin.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({
        ...co,
        namespace: checks,
        body: {
          apiVersion: HC_API_VERSION,
          kind: HC_KIND,
          metadata: { name: 'as-runner', namespace: checks },
          spec: {
            runInterval: '10m',
            timeout: '30s',
            podSpec: {
              spec: {
                containers: [{ name: 'check', image: 'example/v3-check:1', command: [checker, 'success'] }],
              },
            },
          },
        },
      });
      const kubeconfig = await writeKubeConfig(clients.get('khrun-runner')!, 'rbac-healthcheck-runner');
      const podsLeft = async () =>
        (
          await admin
            .makeApiClient(CoreV1Api)
            .listNamespacedPod({ namespace: checks, labelSelector: 'healthcheck=as-runner' })
        ).items.filter((p) => !p.metadata?.deletionTimestamp);
      // Twice: v3 leaves a run's pod until the next run, whose clean-up (as the runner) removes it.
      let previous: string | undefined;
      for (const count of [1, 2]) {
        const result = await runKhrun(
          ['--healthcheck', 'as-runner', '--namespace', checks, '--output', 'json'],
          {
            KUBECONFIG: kubeconfig,
          },
        );
        expect(result.code, result.stderr).toBe(0);
        expect(outcomeOf(result), result.stdout).toMatchObject({
          result: 'recorded',
          kind: 'Succeeded',
          ok: true,
        });
        const hc = (await custom.getNamespacedCustomObject({
          ...co,
          namespace: checks,
          name: 'as-runner',
        })) as HealthCheck;
        expect(hc.status).toMatchObject({ ok: true, successCount: count });
        expect(hc.status?.currentUUID ?? '').toBe('');
        // Only this run's pod: the first run's was removed by the second (not still the first's).
        const pods = await podsLeft();
        expect(pods).toHaveLength(1);
        expect(pods[0]?.metadata?.name).not.toBe(previous);
        previous = pods[0]?.metadata?.name;
        expect(pods[0]?.metadata?.ownerReferences?.[0]).toMatchObject({
          kind: HC_KIND,
          uid: hc.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        });
      }
    } finally {
      await dropNamespace(admin, checks);
    }
  }, 120_000);

  it('the runner is denied creating and deleting HealthChecks for real (403)', async () => {
    const custom = clients.get('khrun-runner')!.makeApiClient(CustomObjectsApi);
    const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL, namespace: ns };
    const body = { apiVersion: HC_API_VERSION, kind: HC_KIND, metadata: { name: 'x' }, spec: {} };
    expect(await statusOf(custom.createNamespacedCustomObject({ ...co, body }))).toBe(403);
    expect(await statusOf(custom.deleteNamespacedCustomObject({ ...co, name: 'x' }))).toBe(403);
  });
});
