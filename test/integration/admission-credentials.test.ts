import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckerPod } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { toV3Pod } from '../../lib/healthcheck/pod-view.ts';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_KIND,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { validateHealthCheck } from '../../lib/healthcheck/validate.ts';
import { asJobPod } from '../../lib/job/job-writes.ts';
import { jobAsCheck, KHJOB_KIND, KHJOB_PLURAL, type KhJob } from '../../lib/job/khjob.ts';
import { KH_GROUP, KH_VERSION, type KhCheck, type ValidCheck } from '../../lib/state/resources.ts';
import { inNamespace } from '../compat/v2-manifests.ts';
import { pollUntil, REFUSED, refusal, refusedBy } from './helpers/admission.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import {
  applyDeploy,
  DEPLOY_NAMESPACE,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './helpers/deploy.ts';
import { createCheck, outcomeOf, readState, repoRoot, runKhrun } from './helpers/khrun.ts';
import { applyObjects } from './helpers/kuberhealthy-v2.ts';

// Policy 1c (khrun-runner-checker-credentials): a checker pod the runner creates takes none of its
// namespace's identities or data (a ServiceAccount other than default, Secrets, PersistentVolumeClaims and
// other storage, tokens for other audiences, ResourceClaims, labels that Services select) unless an admin
// labelled the namespace khrun.dev/checker-credentials=allowed. It has no parameters, so it holds a "ghost"
// pod, one that names a check that does not exist and that policies 2, 2b and 2c cannot see; every route
// below was admitted for such a pod before the policy (policy 1b only kept it off the node). TokenRequest
// tokens of the shipped ServiceAccounts; every write a dry run through the whole admission chain.

const admin = adminKubeConfig();
const DRY = 'All';
const CREDENTIALS = 'khrun.dev/checker-credentials';
/** The namespace of the routes: unlabelled, with one check of each kind (their bindings need parameters). */
let plain: string;
/** The same, labelled by an admin. */
let opened: string;
let runner: KubeConfig;
const checks = new Map<string, { check: ValidCheck; job: KhJob; hc: HealthCheck }>();

/** A check as a user writes one: default ServiceAccount, its script from a configMap. */
const SPEC: V1PodSpec = {
  containers: [
    {
      name: 'main',
      image: 'busybox',
      command: ['sh', '/scripts/check.sh'],
      volumeMounts: [{ name: 'scripts', mountPath: '/scripts' }],
    },
  ],
  volumes: [{ name: 'scripts', configMap: { name: 'check-scripts' } }],
};

const custom = () => admin.makeApiClient(CustomObjectsApi);

async function checksIn(namespace: string) {
  const check = validateCheck(await createCheck(admin, namespace, 'cred-check', SPEC));
  if (!check.ok) throw new Error(check.reason);
  const job = (await custom().createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHJOB_PLURAL,
    namespace,
    body: {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: KHJOB_KIND,
      metadata: { name: 'cred-job' },
      spec: { timeout: '30s', podSpec: SPEC },
    },
  })) as KhJob;
  const hc = (await custom().createNamespacedCustomObject({
    group: HC_GROUP,
    version: HC_VERSION,
    plural: HC_PLURAL,
    namespace,
    body: {
      apiVersion: HC_API_VERSION,
      kind: HC_KIND,
      metadata: { name: 'cred-hc' },
      spec: { runInterval: '10m', timeout: '30s', podSpec: { spec: SPEC } },
    },
  })) as HealthCheck;
  checks.set(namespace, { check: check.check, job, hc });
}

beforeAll(async () => {
  await applyDeploy({ name: 'admission-credentials' });
  plain = await freshNamespace(admin, 'cred');
  opened = await freshNamespace(admin, 'cred-open');
  const core = admin.makeApiClient(CoreV1Api);
  await core.patchNamespace(
    { name: opened, body: { metadata: { labels: { [CREDENTIALS]: 'allowed' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  // The ServiceAccount admission plugin refuses a pod whose ServiceAccount does not exist, before any policy.
  for (const namespace of [plain, opened]) {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'powerful' } } });
    await checksIn(namespace);
  }
  runner = await serviceAccountKubeConfig(admin, DEPLOY_NAMESPACE, 'khrun-runner');
  // The policies and their parameters reach the API server's informers a moment after they are stored.
  const ready = await pollUntil(
    async () =>
      (await refusal(create(kinds.khcheck(plain)))) === 'allowed' &&
      (await refusal(create(kinds.khjob(plain)))) === 'allowed' &&
      (await refusal(create(kinds.healthcheck(plain)))) === 'allowed' &&
      refusedBy(
        'khrun-runner-checker-credentials',
        await refusal(create(ghost(kinds.khcheck(plain), asPowerful))),
      ),
    60_000,
  );
  if (!ready) console.warn('the admission policies were not in effect within 60 s');
}, 180_000);

afterAll(async () => {
  await dropNamespace(admin, plain);
  await dropNamespace(admin, opened);
});

const build = (check: ValidCheck, runUuid: string) =>
  buildCheckerPod({
    check,
    runUuid,
    reportingUrl: 'http://127.0.0.1:1/externalCheckStatus',
    deadlineEpochMs: Date.now() + 60_000,
    nowEpochMs: Date.now(),
  });

/** The checker pod khrun makes for each kind of check of a namespace, as the runner builds it. */
const kinds = {
  khcheck: (namespace: string): V1Pod =>
    build(checks.get(namespace)!.check, '00000000-0000-4000-8000-0000000000c1'),
  khjob: (namespace: string): V1Pod => {
    const { job } = checks.get(namespace)!;
    const valid = validateCheck(jobAsCheck(job));
    if (!valid.ok) throw new Error(valid.reason);
    return asJobPod(build(valid.check, job.metadata.uid ?? ''), job);
  },
  healthcheck: (namespace: string): V1Pod => {
    const { hc } = checks.get(namespace)!;
    const valid = validateHealthCheck(hc);
    if (!valid.ok) throw new Error(valid.reason);
    return toV3Pod(
      build(valid.check.check, '00000000-0000-4000-8000-0000000000c3'),
      hc,
      Math.floor(Date.now() / 1000),
    );
  },
};

/**
 * The pod renamed to a check that does not exist and owned by that name alone (any uid), in each kind's
 * shape: no parameter constrains it, so policies 1, 1b and 1c are all that hold it.
 */
function ghost(pod: V1Pod, mutate: (spec: V1PodSpec, pod: V1Pod) => void = () => {}): V1Pod {
  const meta = pod.metadata!;
  const owner = meta.ownerReferences![0]!;
  for (const key of ['kuberhealthy-check-name', 'healthcheck'])
    if (meta.labels?.[key]) meta.labels[key] = 'ghost';
  for (const key of ['comcast.github.io/check-name', 'kuberhealthyCheckName'])
    if (meta.annotations?.[key]) meta.annotations[key] = 'ghost';
  meta.name = `ghost-${meta.name}`;
  meta.ownerReferences = [{ ...owner, name: 'ghost', uid: '00000000-0000-4000-8000-00000000dead' }];
  mutate(pod.spec!, pod);
  return pod;
}

const create = (pod: V1Pod, kc: KubeConfig = runner) =>
  kc
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({ namespace: pod.metadata?.namespace ?? '', body: pod, dryRun: DRY });

const asPowerful = (p: V1PodSpec) => {
  p.serviceAccountName = 'powerful';
};

const ROUTES: Array<[string, (p: V1PodSpec, pod: V1Pod) => void]> = [
  ['another ServiceAccount of the namespace', asPowerful],
  [
    'a secret volume',
    (p) => {
      p.volumes!.push({ name: 'stolen', secret: { secretName: 'db-password' } });
    },
  ],
  [
    'a projected volume of a secret',
    (p) => {
      p.volumes!.push({ name: 'stolen', projected: { sources: [{ secret: { name: 'db-password' } }] } });
    },
  ],
  [
    'an env entry from a secret',
    (p) => {
      p.containers[0]!.env!.push({
        name: 'PW',
        valueFrom: { secretKeyRef: { name: 'db-password', key: 'pw' } },
      });
    },
  ],
  [
    'an envFrom secret',
    (p) => {
      p.containers[0]!.envFrom = [{ secretRef: { name: 'db-password' } }];
    },
  ],
  [
    'an init container reading a secret',
    (p) => {
      p.initContainers = [
        { name: 'init', image: 'busybox', envFrom: [{ secretRef: { name: 'db-password' } }] },
      ];
    },
  ],
  [
    'a PersistentVolumeClaim',
    (p) => {
      p.volumes!.push({ name: 'data', persistentVolumeClaim: { claimName: 'database' } });
    },
  ],
  [
    'an ephemeral claim cloned from a PersistentVolumeClaim',
    (p) => {
      p.volumes!.push({
        name: 'clone',
        ephemeral: {
          volumeClaimTemplate: {
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '1Gi' } },
              dataSource: { kind: 'PersistentVolumeClaim', name: 'database' },
            },
          },
        },
      });
    },
  ],
  [
    'a CSI volume with a node publish secret',
    (p) => {
      p.volumes!.push({
        name: 'vault',
        csi: { driver: 'secrets-store.csi.k8s.io', nodePublishSecretRef: { name: 'db-password' } },
      });
    },
  ],
  [
    'an NFS export',
    (p) => {
      p.volumes!.push({ name: 'nfs', nfs: { server: '10.0.0.9', path: '/exports' } });
    },
  ],
  [
    'a ServiceAccount token for another audience',
    (p) => {
      p.volumes!.push({
        name: 'cloud',
        projected: { sources: [{ serviceAccountToken: { audience: 'sts.amazonaws.com', path: 'token' } }] },
      });
    },
  ],
  [
    "a certificate for the pod's ServiceAccount (projected podCertificate)",
    (p) => {
      p.volumes!.push({
        name: 'cert',
        projected: {
          sources: [
            {
              podCertificate: {
                signerName: 'example.com/client',
                keyType: 'ED25519',
                credentialBundlePath: 'bundle',
              },
            } as never,
          ],
        },
      });
    },
  ],
  [
    'a ResourceClaim of the namespace',
    (p) => {
      p.resourceClaims = [{ name: 'gpu', resourceClaimName: 'shared-gpu' }];
    },
  ],
  [
    "a label a Service of the namespace selects (its traffic, its NetworkPolicy's allowances)",
    (_, pod) => {
      pod.metadata!.labels!['app.kubernetes.io/name'] = 'database';
    },
  ],
];

describe('no checker pod takes its namespace credentials unless an admin labelled the namespace', () => {
  it.each(['khcheck', 'khjob', 'healthcheck'] as const)(
    'allows the %s checker pod khrun builds, and a ghost that asks for nothing of the namespace',
    async (kind) => {
      expect(await refusal(create(kinds[kind](plain)))).toBe('allowed');
      expect(await refusal(create(ghost(kinds[kind](plain))))).toBe('allowed');
    },
  );

  describe.each(['khcheck', 'khjob', 'healthcheck'] as const)('a ghost %s pod', (kind) => {
    it.each(ROUTES)('with %s: refused, saying what and the command that allows it', async (_, mutate) => {
      const answer = await refusal(create(ghost(kinds[kind](plain), mutate)));
      expect(answer).toMatch(REFUSED);
      expect(answer).toContain('khrun-runner-checker-credentials');
      expect(answer).toContain(`kubectl label namespace ${plain} ${CREDENTIALS}=allowed`);
    });
  });

  it('names what it refused: the ServiceAccount, the volumes, the containers, the labels', async () => {
    expect(await refusal(create(ghost(kinds.khcheck(plain), asPowerful)))).toContain(
      'runs as the ServiceAccount powerful',
    );
    const volume = ghost(kinds.khcheck(plain), (p) => {
      p.volumes!.push({ name: 'stolen', secret: { secretName: 'db-password' } });
    });
    expect(await refusal(create(volume))).toContain('mounts the volumes stolen');
    const env = ghost(kinds.khcheck(plain), (p) => {
      p.containers[0]!.envFrom = [{ secretRef: { name: 'db-password' } }];
    });
    expect(await refusal(create(env))).toContain('environment of its containers main');
    const label = ghost(kinds.khcheck(plain), (_, pod) => {
      pod.metadata!.labels!.role = 'frontend';
    });
    expect(await refusal(create(label))).toContain('carries the labels role');
  });

  it("allows the same in a namespace an admin labelled (policies 2-2c still pin a real check's pod)", async () => {
    const taking = (pod: V1Pod) =>
      ghost(pod, (p) => {
        asPowerful(p);
        p.volumes!.push({ name: 'stolen', secret: { secretName: 'db-password' } });
      });
    for (const kind of ['khcheck', 'khjob', 'healthcheck'] as const)
      expect(await refusal(create(taking(kinds[kind](opened)))), kind).toBe('allowed');
    // A real check's pod there is still its check's spec: another ServiceAccount is refused by policy 2.
    const real = kinds.khcheck(opened);
    asPowerful(real.spec!);
    expect(await refusal(create(real))).toMatch(/^403 .*khrun-runner-checker-pod-spec/s);
  });

  it('a real run as the runner records the refusal in the khstate, naming the command that allows it', async () => {
    await createCheck(admin, plain, 'cred-sa', {
      serviceAccountName: 'powerful',
      containers: [{ name: 'main', image: 'busybox', command: ['true'] }],
    });
    const kubeconfig = await writeKubeConfig(runner, 'admission-credentials-runner');
    const result = await runKhrun(['--check', 'cred-sa', '--namespace', plain, '--output', 'json'], {
      KUBECONFIG: kubeconfig,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(outcomeOf(result), result.stdout).toMatchObject({ result: 'recorded', ok: false });
    const errors = (await readState(admin, plain, 'cred-sa'))?.spec.Errors ?? [];
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('runs as the ServiceAccount powerful (not default)');
    expect(errors[0]).toContain(`kubectl label namespace ${plain} ${CREDENTIALS}=allowed`);
  }, 120_000);

  it('the runner cannot label a namespace to open it (rbac.test.ts: nor can the tick, sync or the server)', async () => {
    const answer = await refusal(
      runner
        .makeApiClient(CoreV1Api)
        .patchNamespace(
          { name: plain, body: { metadata: { labels: { [CREDENTIALS]: 'allowed' } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
    );
    expect(answer).toMatch(/^403 /);
  });
});

describe("Kuberhealthy v2.7.1's own checks (their YAMLs): the label is the one step they need", () => {
  const YAMLS = [
    'cmd/test-check/khcheck.yaml',
    'cmd/pod-status-check/pod-status-check.yaml',
    'cmd/pod-restarts-check/pod-restarts-check.yaml',
    'cmd/namespace-pod-check/namespace-pod-check.yaml',
    'cmd/resource-quota-check/resource-quota.yaml',
    'cmd/daemonset-check/daemonset-check.yaml',
  ];
  /** The khchecks of the YAMLs (and their ServiceAccounts), applied into namespace by the admin. */
  async function applyKuberhealthyChecks(namespace: string): Promise<ValidCheck[]> {
    const objects = (
      await Promise.all(
        YAMLS.map(
          async (y) =>
            inNamespace(
              await readFile(join(repoRoot, 'test/fixtures/kuberhealthy/v2.7.1', y), 'utf8'),
              namespace,
            ).objects,
        ),
      )
    )
      .flat()
      .filter((o) => o.kind === 'ServiceAccount' || o.kind === 'KuberhealthyCheck');
    await applyObjects(objects, `credentials-kuberhealthy-${namespace}`);
    const names = objects.filter((o) => o.kind === 'KuberhealthyCheck').map((o) => o.metadata!.name!);
    return Promise.all(
      names.map(async (name) => {
        const source = (await custom().getNamespacedCustomObject({
          group: KH_GROUP,
          version: KH_VERSION,
          plural: 'khchecks',
          namespace,
          name,
        })) as KhCheck;
        const valid = validateCheck(source);
        if (!valid.ok) throw new Error(valid.reason);
        return valid.check;
      }),
    );
  }

  it('refuses their pods in an unlabelled namespace, naming the label, and runs them in a labelled one', async () => {
    const unlabelled = await applyKuberhealthyChecks(plain);
    const labelled = await applyKuberhealthyChecks(opened);
    expect(unlabelled.map((c) => c.name).sort()).toEqual([
      'daemonset',
      'kh-test-check',
      'namespace-pod-check',
      'pod-restarts',
      'pod-status',
      'resource-quota',
    ]);
    for (const check of unlabelled) {
      const answer = await refusal(create(build(check, '00000000-0000-4000-8000-0000000000c5')));
      expect(answer, check.name).toMatch(REFUSED);
      expect(answer, check.name).toContain(`kubectl label namespace ${plain} ${CREDENTIALS}=allowed`);
    }
    for (const check of labelled)
      expect(await refusal(create(build(check, '00000000-0000-4000-8000-0000000000c6'))), check.name).toBe(
        'allowed',
      );
  });
});

describe("khrun's report key Secret", () => {
  it("is never a checker pod's in khrun's namespace, even one an admin labelled", async () => {
    const core = admin.makeApiClient(CoreV1Api);
    const ns = DEPLOY_NAMESPACE;
    const check = validateCheck(
      await createCheck(admin, ns, 'cred-key-check', {
        containers: [{ name: 'main', image: 'busybox', command: ['true'] }],
      }),
    );
    if (!check.ok) throw new Error(check.reason);
    const label = (value: string | null) =>
      core.patchNamespace(
        { name: ns, body: { metadata: { labels: { [CREDENTIALS]: value } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await label('allowed');
    try {
      const pod = (mutate: (p: V1PodSpec) => void) =>
        ghost(build(check.check, '00000000-0000-4000-8000-0000000000c4'), mutate);
      // With the label in force (policy 1c sees the namespace), a ghost may mount a Secret of its own...
      const other = pod((p) => {
        p.volumes = [{ name: 's', secret: { secretName: 'some-secret' } }];
      });
      expect(await pollUntil(async () => (await refusal(create(other))) === 'allowed', 30_000)).toBe(true);
      // ...but never the report key, by volume, projection, env or envFrom.
      for (const mutate of [
        (p: V1PodSpec) => {
          p.volumes = [{ name: 's', secret: { secretName: 'khrun-report-key' } }];
        },
        (p: V1PodSpec) => {
          p.volumes = [{ name: 's', projected: { sources: [{ secret: { name: 'khrun-report-key' } }] } }];
        },
        (p: V1PodSpec) => {
          p.containers[0]!.env!.push({
            name: 'K',
            valueFrom: { secretKeyRef: { name: 'khrun-report-key', key: 'key' } },
          });
        },
        (p: V1PodSpec) => {
          p.containers[0]!.envFrom = [{ secretRef: { name: 'khrun-report-key' } }];
        },
      ]) {
        const answer = await refusal(create(pod(mutate)));
        expect(answer).toMatch(REFUSED);
        expect(answer).toContain("never reads khrun's report key Secret khrun-report-key");
      }
    } finally {
      await label(null);
      await custom()
        .deleteNamespacedCustomObject({
          group: KH_GROUP,
          version: KH_VERSION,
          plural: 'khchecks',
          namespace: ns,
          name: 'cred-key-check',
        })
        .catch(() => undefined);
    }
  });
});
