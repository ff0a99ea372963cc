import {
  AuthorizationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1CronJob,
  type V1Job,
  type V1Pod,
  type V1PodSpec,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckerPod } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { healthCheckCronJob } from '../../lib/healthcheck/cronjob.ts';
import { KHRUN_POD_ANNOTATION, toV3Pod } from '../../lib/healthcheck/pod-view.ts';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_KIND,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { validateHealthCheck } from '../../lib/healthcheck/validate.ts';
import { statusCodeOf } from '../../lib/kube/errors.ts';
import { batchJobMetadata, runBatchJobSpec } from '../../lib/schedule/batch-job.ts';
import { checkCronJob } from '../../lib/schedule/check-cronjob.ts';
import { DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import type { KhCheck, ValidCheck } from '../../lib/state/resources.ts';
import { pollUntil } from './helpers/admission.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, uniqueName } from './helpers/cluster.ts';
import { applyDeploy, DEPLOY_NAMESPACE, serviceAccountKubeConfig } from './helpers/deploy.ts';
import { createCheck } from './helpers/khrun.ts';

// The indirect routes around RBAC, tried with TokenRequest tokens of the shipped ServiceAccounts against the
// shipped ValidatingAdmissionPolicies (infra/deploy): what RBAC lets a verb do, the policy narrows to what
// khrun does with it. Every write is a dry run (dryRun=All), which runs the whole admission chain, so
// an allowed request leaves nothing behind and a refused one is refused exactly as it would be for real.

const admin = adminKubeConfig();
const ns = DEPLOY_NAMESPACE;
const DRY = 'All';
let checks: string;
let runner: KubeConfig;
let tick: KubeConfig;
let sync: KubeConfig;
let check: ValidCheck;
let template: V1PodTemplateSpec;

beforeAll(async () => {
  await applyDeploy({ name: 'admission', components: ['sync'], suspend: ['khrun-sync'] });
  checks = await freshNamespace(admin, 'vap');
  const core = admin.makeApiClient(CoreV1Api);
  // Checks here may use the namespace's ServiceAccounts (an admin allowed it, policy 1c), so a pod with
  // another ServiceAccount meets the rules tried here alone; admission-credentials.test.ts tries policy 1c.
  await core.patchNamespace(
    { name: checks, body: { metadata: { labels: { 'khrun.dev/checker-credentials': 'allowed' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  // A ServiceAccount more powerful than the runner's, which a khcheck could name; and a pod that is no
  // checker pod (a workload of the namespace) for the runner to try to delete.
  await core.createNamespacedServiceAccount({ namespace: checks, body: { metadata: { name: 'powerful' } } });
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'powerful' } } });
  const source: KhCheck = await createCheck(admin, checks, 'vap-check', {
    containers: [{ name: 'main', image: 'busybox', command: ['true'] }],
  });
  const valid = validateCheck(source);
  if (!valid.ok) throw new Error(valid.reason);
  check = valid.check;
  template = (await core.readNamespacedPodTemplate({ name: 'khrun-runner', namespace: ns })).template!;
  runner = await serviceAccountKubeConfig(admin, ns, 'khrun-runner');
  tick = await serviceAccountKubeConfig(admin, ns, 'khrun-tick');
  sync = await serviceAccountKubeConfig(admin, ns, 'khrun-sync');
  await waitUntilEnforced();
}, 180_000);
afterAll(async () => {
  await dropNamespace(admin, checks);
  await admin
    .makeApiClient(CoreV1Api)
    .deleteNamespacedServiceAccount({ namespace: ns, name: 'powerful' })
    .catch(() => undefined);
});

/**
 * A new policy takes effect once the API server's admission informers have it and its parameters, a moment
 * after it is stored: wait (bounded) until a request every policy version refuses is refused and the
 * requests khrun makes pass. If that never happens the tests below still run and each fails on its own
 * request, naming the route that got through or the rule that refused.
 */
async function waitUntilEnforced(timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const otherImage = (p: V1PodSpec) => {
    p.containers[0]!.image = 'busybox';
  };
  const ready = async () =>
    REFUSED.test(await refusal(createPod(runner, checkerPod({ namespace: 'kube-system' })))) &&
    REFUSED.test(await refusal(createJob(tick, runnerJob(otherImage)))) &&
    REFUSED.test(await refusal(createCron(sync, checkCron(otherImage)))) &&
    (await refusal(createJob(tick, runnerJob()))) === 'allowed' &&
    (await refusal(createCron(sync, checkCron()))) === 'allowed';
  while (!(await ready())) {
    if (Date.now() > deadline) {
      console.warn(`the admission policies were not in effect within ${timeoutMs} ms`);
      return;
    }
    await new Promise<void>((resolve) => setTimeout(resolve, 250).unref());
  }
}

/**
 * A refusal by one of the admission policies: 403 (a validation's reason Forbidden) or 422 (a binding whose
 * parameters are missing, e.g. a namespace without khchecks), naming the policy; not RBAC's 403 or another
 * admission plugin's.
 */
const REFUSED = /^(403|422) .*ValidatingAdmissionPolicy/s;

/** The message of a refused request, for asserting which rule refused it. */
async function refusal(request: Promise<unknown>): Promise<string> {
  try {
    await request;
    return 'allowed';
  } catch (error) {
    const body = (error as { body?: unknown }).body;
    return `${statusCodeOf(error)} ${typeof body === 'string' ? body : JSON.stringify(body)}`;
  }
}

function checkerPod(
  overrides: { namespace?: string; serviceAccountName?: string; image?: string } = {},
): V1Pod {
  const pod = buildCheckerPod({
    check,
    runUuid: '00000000-0000-4000-8000-000000000001',
    reportingUrl: 'http://127.0.0.1:1/externalCheckStatus',
    deadlineEpochMs: Date.now() + 60_000,
    nowEpochMs: Date.now(),
  });
  if (overrides.namespace) pod.metadata!.namespace = overrides.namespace;
  if (overrides.serviceAccountName) pod.spec!.serviceAccountName = overrides.serviceAccountName;
  if (overrides.image) pod.spec!.containers[0]!.image = overrides.image;
  return pod;
}

/** A node that does not exist: pods bound to it are stored and never run. */
const NOWHERE = 'no-such-node';

/** A pod created by the admin that is no checker pod, bound to no real node; its name. */
async function createUnscheduled(namespace: string, name: string): Promise<string> {
  const pod = await admin.makeApiClient(CoreV1Api).createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: { nodeName: NOWHERE, containers: [{ name: 'c', image: 'busybox', command: ['sleep', '3600'] }] },
    },
  });
  return pod.metadata!.name!;
}

const createPod = (kc: KubeConfig, pod: V1Pod) =>
  kc
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({ namespace: pod.metadata?.namespace ?? '', body: pod, dryRun: DRY });

function runnerJob(mutate: (spec: V1PodSpec) => void = () => {}): V1Job {
  const spec = runJobSpec(
    template,
    { namespace: checks, name: check.name, timeoutMs: 60_000 },
    DEFAULT_RUN_JOB_OPTIONS,
  );
  mutate(spec.template.spec!);
  return { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'khrun-run-vap', namespace: ns }, spec };
}

const createJob = (kc: KubeConfig, job: V1Job) =>
  kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns, body: job, dryRun: DRY });

function checkCron(mutate: (spec: V1PodSpec) => void = () => {}): V1CronJob {
  const { cronJob } = checkCronJob(check.source, template, DEFAULT_RUN_JOB_OPTIONS);
  mutate(cronJob.spec!.jobTemplate.spec!.template.spec!);
  return cronJob;
}

const createCron = (kc: KubeConfig, cron: V1CronJob) =>
  kc
    .makeApiClient(BatchV1Api)
    .createNamespacedCronJob({ namespace: cron.metadata?.namespace ?? '', body: cron, dryRun: DRY });

describe('the tick may create only Jobs that run the runner template as khrun-runner', () => {
  it('allows the Job it dispatches', async () => {
    expect(await refusal(createJob(tick, runnerJob()))).toBe('allowed');
  });

  it.each<[string, (p: V1PodSpec) => void]>([
    [
      'another ServiceAccount',
      (p) => {
        p.serviceAccountName = 'powerful';
      },
    ],
    [
      'the default ServiceAccount',
      (p) => {
        // Both fields: the API server fills serviceAccountName from the deprecated serviceAccount, which
        // the PodTemplate as read carries too.
        delete p.serviceAccountName;
        delete p.serviceAccount;
      },
    ],
    [
      'another image',
      (p) => {
        p.containers[0]!.image = 'busybox';
      },
    ],
    [
      'other arguments',
      (p) => {
        p.containers[0]!.args = ['sh', '-c', 'id'];
      },
    ],
    [
      'an extra container',
      (p) => {
        p.containers.push({ name: 'x', image: 'busybox' });
      },
    ],
    [
      'a hostPath volume',
      (p) => {
        p.volumes = [{ name: 'h', hostPath: { path: '/' } }];
      },
    ],
    [
      'the host network',
      (p) => {
        p.hostNetwork = true;
      },
    ],
    [
      'NODE_OPTIONS in the environment',
      (p) => {
        p.containers[0]!.env!.push({ name: 'NODE_OPTIONS', value: '--require=/tmp/x.js' });
      },
    ],
  ])('refuses a Job with %s', async (_, mutate) => {
    expect(await refusal(createJob(tick, runnerJob(mutate)))).toMatch(REFUSED);
  });

  it('allows a batch Job (KHRUN_BATCH instead of CHECK_NAME), and no more in its environment', async () => {
    const members = ['a', 'b'].map((name) => ({ namespace: 'team-a', name, timeoutMs: 30_000 }));
    const batch: V1Job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: batchJobMetadata('khrun-batch-vap', ns, members),
      spec: runBatchJobSpec(template, members, DEFAULT_RUN_JOB_OPTIONS),
    };
    expect(await refusal(createJob(tick, batch))).toBe('allowed');
    const extra = structuredClone(batch);
    extra.spec!.template.spec!.containers[0]!.env!.push({
      name: 'NODE_OPTIONS',
      value: '--require=/tmp/x.js',
    });
    expect(await refusal(createJob(tick, extra))).toMatch(REFUSED);
  });
});

describe('sync may create only CronJobs that run the runner template as khrun-runner', () => {
  it('allows the CronJob it keeps for a khcheck', async () => {
    expect(await refusal(createCron(sync, checkCron()))).toBe('allowed');
  });

  it.each<[string, (p: V1PodSpec) => void]>([
    [
      'another ServiceAccount',
      (p) => {
        p.serviceAccountName = 'powerful';
      },
    ],
    [
      'another image',
      (p) => {
        p.containers[0]!.image = 'busybox';
      },
    ],
    [
      'a privileged init container',
      (p) => {
        p.initContainers = [{ name: 'i', image: 'busybox', securityContext: { privileged: true } }];
      },
    ],
  ])('refuses a CronJob with %s', async (_, mutate) => {
    expect(await refusal(createCron(sync, checkCron(mutate)))).toMatch(REFUSED);
  });
});

describe("the Lambda runCheck's group kh-runner is held to the runner's rules", () => {
  it('refuses its checker-shaped pod in kube-system and allows its checker pod', async () => {
    // docs/install.md maps the runCheck role to the group kh-runner, bound to the khrun-runner ClusterRole;
    // impersonated here (user and group headers) with the admin's right to impersonate.
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const name = uniqueName('khrun-lambda-runner');
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'khrun-runner' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'kh-runner' }],
      },
    });
    try {
      // The authorizer sees a new binding a moment after it is stored: wait (bounded) until it does.
      const authz = admin.makeApiClient(AuthorizationV1Api);
      const deadline = Date.now() + 10_000;
      const granted = async () =>
        (
          await authz.createSubjectAccessReview({
            body: {
              spec: {
                user: 'khrun-lambda',
                groups: ['kh-runner'],
                resourceAttributes: { verb: 'create', resource: 'pods', namespace: checks },
              },
            },
          })
        ).status?.allowed === true;
      while (!(await granted()) && Date.now() < deadline)
        await new Promise<void>((resolve) => setTimeout(resolve, 100).unref());
      const asLambda = setHeaderOptions(
        'Impersonate-Group',
        'kh-runner',
        setHeaderOptions('Impersonate-User', 'khrun-lambda'),
      );
      const core = admin.makeApiClient(CoreV1Api);
      const create = (pod: V1Pod) =>
        core.createNamespacedPod(
          { namespace: pod.metadata?.namespace ?? '', body: pod, dryRun: DRY },
          asLambda,
        );
      expect(await refusal(create(checkerPod()))).toBe('allowed');
      expect(await refusal(create(checkerPod({ namespace: 'kube-system' })))).toMatch(REFUSED);
      expect(await refusal(create(checkerPod({ serviceAccountName: 'powerful' })))).toMatch(REFUSED);
    } finally {
      await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
    }
  });
});

describe('the policies leave everyone else alone', () => {
  it('the admin still creates pods in kube-system and Jobs as any ServiceAccount', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    const pod: V1Pod = {
      metadata: { name: 'admin-pod' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    };
    expect(
      await refusal(core.createNamespacedPod({ namespace: 'kube-system', body: pod, dryRun: DRY })),
    ).toBe('allowed');
    expect(
      await refusal(
        createJob(
          admin,
          runnerJob((p) => {
            p.serviceAccountName = 'powerful';
          }),
        ),
      ),
    ).toBe('allowed');
  });
});

describe('the runner may create and delete only checker pods of khchecks', () => {
  it('allows the checker pod it builds from the khcheck', async () => {
    expect(await refusal(createPod(runner, checkerPod()))).toBe('allowed');
  });

  it('refuses a checker-shaped pod in kube-system', async () => {
    expect(await refusal(createPod(runner, checkerPod({ namespace: 'kube-system' })))).toMatch(REFUSED);
  });

  it('refuses a pod that is no checker pod', async () => {
    const plain: V1Pod = {
      metadata: { name: 'plain', namespace: checks },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    };
    expect(await refusal(createPod(runner, plain))).toMatch(REFUSED);
  });

  it("refuses a checker pod with a ServiceAccount or image other than its khcheck's", async () => {
    expect(await refusal(createPod(runner, checkerPod({ serviceAccountName: 'powerful' })))).toMatch(REFUSED);
    expect(await refusal(createPod(runner, checkerPod({ image: 'evil' })))).toMatch(REFUSED);
  });

  it("refuses a checker pod of khrun's own ServiceAccounts, even for a khcheck that names none", async () => {
    // The case CEL cannot close (a khcheck name and uid that do not exist: no parameter constrains the pod)
    // still may not borrow a ServiceAccount named like khrun's.
    await admin
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: checks, body: { metadata: { name: 'khrun-sync' } } });
    const pod = checkerPod({ serviceAccountName: 'khrun-sync' });
    pod.metadata!.labels!['kuberhealthy-check-name'] = 'no-such-check';
    pod.metadata!.annotations!['comcast.github.io/check-name'] = 'no-such-check';
    pod.metadata!.ownerReferences![0]!.name = 'no-such-check';
    pod.metadata!.ownerReferences![0]!.uid = '00000000-0000-4000-8000-0000000000ff';
    expect(await refusal(createPod(runner, pod))).toMatch(/^403 .*never runs as one of khrun's own/s);
  });

  it('refuses a checker pod in a namespace without khchecks', async () => {
    const empty = await freshNamespace(admin, 'vap-empty');
    try {
      expect(await refusal(createPod(runner, checkerPod({ namespace: empty })))).toMatch(REFUSED);
    } finally {
      await dropNamespace(admin, empty);
    }
  });

  it("refuses deleting pods that are not checker pods, and kube-system's", async () => {
    const core = runner.makeApiClient(CoreV1Api);
    const workload = await createUnscheduled(checks, 'workload');
    const system = await createUnscheduled('kube-system', uniqueName('victim'));
    try {
      expect(
        await refusal(core.deleteNamespacedPod({ namespace: checks, name: workload, dryRun: DRY })),
      ).toMatch(REFUSED);
      expect(
        await refusal(core.deleteNamespacedPod({ namespace: 'kube-system', name: system, dryRun: DRY })),
      ).toMatch(REFUSED);
    } finally {
      await admin
        .makeApiClient(CoreV1Api)
        .deleteNamespacedPod({ namespace: 'kube-system', name: system, gracePeriodSeconds: 0 })
        .catch(() => undefined);
    }
  });

  // An Eviction names only the pod: no policy sees whose pod it is, and the API server deletes the evicted
  // pod without admitting that deletion. Before khrun removed its pods by DELETE, the runner's token could
  // evict any pod outside kube-system, kube-public and kube-node-lease; now no role grants pods/eviction,
  // and policy 3 refuses it even where another binding does.
  const evict = (kc: KubeConfig, namespace: string, name: string) =>
    kc.makeApiClient(CoreV1Api).createNamespacedPodEviction({
      namespace,
      name,
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
    });
  const present = async (namespace: string, name: string) => {
    const pod = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedPod({ namespace, name })
      .catch(() => undefined);
    return pod !== undefined && !pod.metadata?.deletionTimestamp;
  };

  it('refuses the runner an eviction of a pod that is no checker pod (403, RBAC), for real', async () => {
    const victim = await createUnscheduled(checks, 'evict-victim');
    const answer = await refusal(evict(runner, checks, victim));
    expect(answer).toMatch(/^403 .*cannot create resource \\?"pods\/eviction\\?"/s);
    expect(await present(checks, victim)).toBe(true);
    // Nor a checker pod khrun made: khrun deletes those (policy 3), it never evicts.
    const body = checkerPod();
    body.metadata!.name = 'evict-checker';
    body.spec!.nodeName = NOWHERE;
    await admin.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: checks, body });
    expect(await refusal(evict(runner, checks, 'evict-checker'))).toMatch(/^403 /);
    expect(await present(checks, 'evict-checker')).toBe(true);
  });

  it('refuses the runner every eviction even where an admin granted pods/eviction (policy 3)', async () => {
    const victim = await createUnscheduled(checks, 'evict-granted');
    const rbacApi = admin.makeApiClient(RbacAuthorizationV1Api);
    const name = 'extra-eviction';
    await rbacApi.createNamespacedRole({
      namespace: checks,
      body: {
        metadata: { name },
        rules: [{ apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] }],
      },
    });
    await rbacApi.createNamespacedRoleBinding({
      namespace: checks,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'ServiceAccount', name: 'khrun-runner', namespace: ns }],
      },
    });
    // RBAC now lets the runner evict here (the authorizer's cache has the binding once this review says so).
    const mayEvict = async () =>
      (
        await runner.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
          body: {
            spec: {
              resourceAttributes: {
                verb: 'create',
                resource: 'pods',
                subresource: 'eviction',
                namespace: checks,
              },
            },
          },
        })
      ).status?.allowed === true;
    expect(await pollUntil(mayEvict, 30_000)).toBe(true);
    const answer = await refusal(evict(runner, checks, victim));
    expect(answer).toMatch(REFUSED);
    expect(answer).toContain('khrun-runner-pod-removal');
    expect(answer).toContain('khrun-runner evicts no pods');
    expect(await present(checks, victim)).toBe(true);
  });

  it('allows deleting a checker pod', async () => {
    const body = checkerPod();
    body.spec!.nodeName = NOWHERE;
    const pod = await admin.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: checks, body });
    const core = runner.makeApiClient(CoreV1Api);
    expect(
      await refusal(core.deleteNamespacedPod({ namespace: checks, name: pod.metadata!.name!, dryRun: DRY })),
    ).toBe('allowed');
  });
});

describe('the runner may create and delete only checker pods of HealthChecks as v3 makes them', () => {
  const hcApi = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
  let hc: HealthCheck;
  let other: HealthCheck;

  const createHc = async (name: string, image: string) =>
    (await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...hcApi,
      namespace: checks,
      body: {
        apiVersion: HC_API_VERSION,
        kind: HC_KIND,
        metadata: { name, namespace: checks },
        spec: {
          runInterval: '10m',
          timeout: '30s',
          podSpec: { spec: { containers: [{ name: 'main', image, command: ['true'] }] } },
        },
      },
    })) as HealthCheck;

  /** The checker pod khrun creates for hc (pod-builder, then v3's contract: healthcheck-port's createPod). */
  function hcPod(of: HealthCheck, overrides: { namespace?: string; image?: string } = {}): V1Pod {
    const valid = validateHealthCheck(of);
    if (!valid.ok) throw new Error(valid.reason);
    const built = buildCheckerPod({
      check: valid.check.check,
      runUuid: '00000000-0000-4000-8000-000000000002',
      reportingUrl: 'http://127.0.0.1:1/check',
      deadlineEpochMs: Date.now() + 60_000,
      nowEpochMs: Date.now(),
    });
    const pod = toV3Pod(built, of, Math.floor(Date.now() / 1000));
    if (overrides.namespace) pod.metadata!.namespace = overrides.namespace;
    if (overrides.image) pod.spec!.containers[0]!.image = overrides.image;
    return pod;
  }

  beforeAll(async () => {
    hc = await createHc('vap-hc', 'busybox');
    other = await createHc('vap-hc-other', 'evil');
    // The new parameters (HealthChecks) reach the policy's informer a moment after they are stored.
    const deadline = Date.now() + 30_000;
    while (
      ((await refusal(createPod(runner, hcPod(hc)))) !== 'allowed' ||
        !REFUSED.test(await refusal(createPod(runner, hcPod(hc, { image: 'evil' }))))) &&
      Date.now() < deadline
    )
      await new Promise<void>((resolve) => setTimeout(resolve, 250).unref());
  }, 60_000);

  it('allows the checker pod it builds from the HealthCheck (controller-owned, blockOwnerDeletion)', async () => {
    const pod = hcPod(hc);
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'HealthCheck',
      blockOwnerDeletion: true,
    });
    expect(await refusal(createPod(runner, pod))).toBe('allowed');
  });

  it('refuses it with another image, in kube-system, or in a namespace without HealthChecks', async () => {
    expect(await refusal(createPod(runner, hcPod(hc, { image: 'evil' })))).toMatch(
      /^403 .*a checker pod of HealthCheck vap-hc runs its podSpec/s,
    );
    expect(await refusal(createPod(runner, hcPod(hc, { namespace: 'kube-system' })))).toMatch(REFUSED);
    const empty = await freshNamespace(admin, 'vap-hc-empty');
    try {
      expect(await refusal(createPod(runner, hcPod(hc, { namespace: empty })))).toMatch(REFUSED);
    } finally {
      await dropNamespace(admin, empty);
    }
  });

  it('refuses a pod labelled for one HealthCheck and owned by another, or with its image', async () => {
    const crossed = hcPod(hc);
    crossed.metadata!.ownerReferences![0] = {
      ...crossed.metadata!.ownerReferences![0]!,
      name: other.metadata.name,
      uid: other.metadata.uid!,
    };
    // Policy 1 (owner named otherwise than the label) and 2c (owner uid) both refuse it.
    expect(await refusal(createPod(runner, crossed))).toMatch(REFUSED);
    // Named and owned by the other HealthCheck, but running this one's image.
    const borrowed = hcPod(other, { image: 'busybox' });
    expect(await refusal(createPod(runner, borrowed))).toMatch(
      /^403 .*a checker pod of HealthCheck vap-hc-other runs its podSpec/s,
    );
    expect(await refusal(createPod(runner, hcPod(other)))).toBe('allowed');
  });

  it("refuses a v3-shaped pod not controlled by its HealthCheck or without khrun's annotation", async () => {
    const notController = hcPod(hc);
    notController.metadata!.ownerReferences![0]!.controller = false;
    expect(await refusal(createPod(runner, notController))).toMatch(REFUSED);
    const unmarked = hcPod(hc);
    delete unmarked.metadata!.annotations![KHRUN_POD_ANNOTATION];
    expect(await refusal(createPod(runner, unmarked))).toMatch(REFUSED);
  });

  it("allows deleting khrun's checker pod of a HealthCheck, not the pods v3's controller made", async () => {
    const core = admin.makeApiClient(CoreV1Api);
    const made = async (mutate: (pod: V1Pod) => void) => {
      const body = hcPod(hc);
      body.spec!.nodeName = NOWHERE;
      body.metadata!.name = uniqueName('vap-hc-pod');
      mutate(body);
      return (await core.createNamespacedPod({ namespace: checks, body })).metadata!.name!;
    };
    const khruns = await made(() => {});
    const v3s = await made((pod) => {
      delete pod.metadata!.annotations![KHRUN_POD_ANNOTATION];
    });
    const asRunner = runner.makeApiClient(CoreV1Api);
    expect(
      await refusal(asRunner.deleteNamespacedPod({ namespace: checks, name: khruns, dryRun: DRY })),
    ).toBe('allowed');
    expect(
      await refusal(asRunner.deleteNamespacedPod({ namespace: checks, name: v3s, dryRun: DRY })),
    ).toMatch(/^403 .*deletes only the checker pods khrun created/s);
  });

  it("lets the tick dispatch and sync keep a HealthCheck's runs (HEALTHCHECK_NAME)", async () => {
    const spec = runJobSpec(
      template,
      { namespace: checks, name: hc.metadata.name, timeoutMs: 30_000, kind: 'healthcheck' },
      DEFAULT_RUN_JOB_OPTIONS,
    );
    const env = spec.template.spec!.containers[0]!.env ?? [];
    expect(env.map((e) => e.name)).toContain('HEALTHCHECK_NAME');
    const job: V1Job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'khrun-run-vap-hc', namespace: ns },
      spec,
    };
    expect(await refusal(createJob(tick, job))).toBe('allowed');
    const { cronJob } = healthCheckCronJob(hc, template, DEFAULT_RUN_JOB_OPTIONS);
    expect(await refusal(createCron(sync, cronJob))).toBe('allowed');
    const image = structuredClone(cronJob);
    image.spec!.jobTemplate.spec!.template.spec!.containers[0]!.image = 'busybox';
    expect(await refusal(createCron(sync, image))).toMatch(REFUSED);
  });
});
