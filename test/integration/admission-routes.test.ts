import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  NodeV1Api,
  PatchStrategy,
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
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_KIND,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { KHJOB_KIND, KHJOB_PLURAL } from '../../lib/job/khjob.ts';
import { checkCronJob } from '../../lib/schedule/check-cronjob.ts';
import { DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import { KH_GROUP, KH_VERSION, type ValidCheck } from '../../lib/state/resources.ts';
import { pollUntil, REFUSED, refusal, refusedBy } from './helpers/admission.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { applyDeploy, DEPLOY_NAMESPACE, serviceAccountKubeConfig } from './helpers/deploy.ts';
import { createCheck } from './helpers/khrun.ts';

// The routes of issue 23 around the shipped ValidatingAdmissionPolicies (infra/deploy), each tried as the
// identity it would be used by (TokenRequest tokens of the shipped ServiceAccounts). Every write is a dry
// run (dryRun=All: the whole admission chain, nothing stored). Each route was admitted by the policies
// before they compared the whole spec; the genuine requests next to them must stay admitted.

const admin = adminKubeConfig();
const RUNTIME_CLASS = 'unconfined';
const ns = DEPLOY_NAMESPACE;
const DRY = 'All';
let checks: string;
let restricted: string;
let opened: string;
let runner: KubeConfig;
let tick: KubeConfig;
let sync: KubeConfig;
let check: ValidCheck;
let other: ValidCheck;
let strict: ValidCheck;
let hostCheck: ValidCheck;
let openedHostCheck: ValidCheck;
let template: V1PodTemplateSpec;

/** A check spec with the parts the API server defaults on a pod (configMap mode, fieldRef apiVersion). */
const RICH: V1PodSpec = {
  serviceAccountName: 'checker',
  containers: [
    {
      name: 'main',
      image: 'busybox',
      command: ['sh', '-c', 'true'],
      env: [
        { name: 'MODE', value: 'quick' },
        { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      ],
      ports: [{ containerPort: 8080 }],
      volumeMounts: [
        { name: 'config', mountPath: '/config', readOnly: true },
        { name: 'scratch', mountPath: '/scratch' },
      ],
      readinessProbe: { exec: { command: ['true'] } },
      securityContext: { allowPrivilegeEscalation: false },
    },
  ],
  volumes: [
    { name: 'config', configMap: { name: 'check-config' } },
    { name: 'scratch', emptyDir: {} },
  ],
};

/** A check that reaches the node: the host's network and a hostPath volume, in a privileged container. */
const HOST: V1PodSpec = {
  hostNetwork: true,
  containers: [
    {
      name: 'main',
      image: 'busybox',
      command: ['true'],
      securityContext: { privileged: true },
      volumeMounts: [{ name: 'host', mountPath: '/host' }],
    },
  ],
  volumes: [{ name: 'host', hostPath: { path: '/' } }],
};

/** A check that Pod Security Admission's restricted level admits. */
const RESTRICTED: V1PodSpec = {
  securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [
    {
      name: 'main',
      image: 'busybox',
      command: ['true'],
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
    },
  ],
};

async function validCheck(namespace: string, name: string, spec: V1PodSpec): Promise<ValidCheck> {
  const valid = validateCheck(await createCheck(admin, namespace, name, spec));
  if (!valid.ok) throw new Error(valid.reason);
  return valid.check;
}

beforeAll(async () => {
  await applyDeploy({ name: 'admission-routes', components: ['sync'], suspend: ['khrun-sync'] });
  checks = await freshNamespace(admin, 'routes');
  restricted = await freshNamespace(admin, 'routes-psa');
  opened = await freshNamespace(admin, 'routes-open');
  const core = admin.makeApiClient(CoreV1Api);
  // The RuntimeClass the runtimeClassName routes name must exist, or the API server's RuntimeClass plugin
  // refuses the pod before any policy sees it (a 403 that would prove nothing about the policies).
  await admin
    .makeApiClient(NodeV1Api)
    .createRuntimeClass({ body: { metadata: { name: RUNTIME_CLASS }, handler: 'runc' } })
    .catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
  await core.patchNamespace(
    {
      name: restricted,
      body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await core.patchNamespace(
    { name: opened, body: { metadata: { labels: { 'khrun.dev/privileged-checks': 'allowed' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  // The checks here run as a ServiceAccount of their own (RICH), as a user's would: an admin allows the
  // namespace's credentials to checks (policy 1c), so these routes meet policies 2, 2b, 2c and 1b alone.
  // admission-credentials.test.ts tries an unlabelled namespace.
  await core.patchNamespace(
    { name: checks, body: { metadata: { labels: { 'khrun.dev/checker-credentials': 'allowed' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  for (const sa of ['powerful', 'checker'])
    await core.createNamespacedServiceAccount({ namespace: checks, body: { metadata: { name: sa } } });
  check = await validCheck(checks, 'route-check', RICH);
  other = await validCheck(checks, 'route-other', {
    containers: [{ name: 'main', image: 'other', command: ['true'] }],
  });
  strict = await validCheck(restricted, 'route-strict', RESTRICTED);
  hostCheck = await validCheck(checks, 'route-host', HOST);
  openedHostCheck = await validCheck(opened, 'route-host', HOST);
  template = (await core.readNamespacedPodTemplate({ name: 'khrun-runner', namespace: ns })).template!;
  runner = await serviceAccountKubeConfig(admin, ns, 'khrun-runner');
  tick = await serviceAccountKubeConfig(admin, ns, 'khrun-tick');
  sync = await serviceAccountKubeConfig(admin, ns, 'khrun-sync');
  // The policies and their parameters reach the API server's admission informers a moment after they are
  // stored, each on its own (all of them new when a file before this one deleted them, as helm.test.ts
  // does): wait until each policy the tests below meet refuses a request of its own, by name. If one never
  // does, each test below fails on its own request.
  const inEffect = async (policy: string, request: Promise<unknown>) =>
    refusedBy(policy, await refusal(request));
  const ready = await pollUntil(
    async () =>
      (await refusal(createPod(checkerPod(check)))) === 'allowed' &&
      (await refusal(createPod(checkerPod(strict)))) === 'allowed' &&
      (await inEffect(
        'khrun-runner-checker-pod-spec',
        createPod(
          checkerPod(check, (p) => {
            p.containers[0]!.image = 'x';
          }),
        ),
      )) &&
      (await inEffect(
        'khrun-runner-node-access',
        createPod(
          ghostPod((p) => {
            p.containers[0]!.securityContext = { privileged: true };
          }),
        ),
      )) &&
      (await inEffect(
        'khrun-tick-job-template',
        createJob(
          runnerJob((p) => {
            p.nodeName = 'control-plane';
          }),
        ),
      )),
    60_000,
  );
  if (!ready) console.warn('the admission policies were not in effect within 60 s');
}, 180_000);

afterAll(async () => {
  await dropNamespace(admin, checks);
  await dropNamespace(admin, restricted);
  await dropNamespace(admin, opened);
  await admin
    .makeApiClient(NodeV1Api)
    .deleteRuntimeClass({ name: RUNTIME_CLASS })
    .catch(() => {});
});

function checkerPod(of: ValidCheck, mutate: (spec: V1PodSpec, pod: V1Pod) => void = () => {}): V1Pod {
  const pod = buildCheckerPod({
    check: of,
    runUuid: '00000000-0000-4000-8000-000000000023',
    reportingUrl: 'http://127.0.0.1:1/externalCheckStatus',
    deadlineEpochMs: Date.now() + 60_000,
    nowEpochMs: Date.now(),
  });
  mutate(pod.spec!, pod);
  return pod;
}

const createPod = (pod: V1Pod, kc: KubeConfig = runner) =>
  kc
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({ namespace: pod.metadata?.namespace ?? '', body: pod, dryRun: DRY });

/** A pod naming a check no khcheck has, owned by that name alone: no parameter constrains it. */
const ghostPod = (mutate: (spec: V1PodSpec) => void) =>
  checkerPod(check, (spec, pod) => {
    pod.metadata!.labels!['kuberhealthy-check-name'] = 'ghost';
    pod.metadata!.annotations!['comcast.github.io/check-name'] = 'ghost';
    pod.metadata!.ownerReferences = [
      { ...pod.metadata!.ownerReferences![0]!, name: 'ghost', uid: '00000000-0000-4000-8000-00000000dead' },
    ];
    mutate(spec);
  });

function runnerJob(mutate: (spec: V1PodSpec) => void = () => {}): V1Job {
  const spec = runJobSpec(
    template,
    { namespace: checks, name: check.name, timeoutMs: 60_000 },
    DEFAULT_RUN_JOB_OPTIONS,
  );
  mutate(spec.template.spec!);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'khrun-run-routes', namespace: ns },
    spec,
  };
}
const createJob = (job: V1Job) =>
  tick.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns, body: job, dryRun: DRY });
function cron(mutate: (spec: V1PodSpec) => void = () => {}): V1CronJob {
  const { cronJob } = checkCronJob(check.source, template, DEFAULT_RUN_JOB_OPTIONS);
  mutate(cronJob.spec!.jobTemplate.spec!.template.spec!);
  return cronJob;
}
const createCron = (cronJob: V1CronJob) =>
  sync
    .makeApiClient(BatchV1Api)
    .createNamespacedCronJob({ namespace: cronJob.metadata!.namespace!, body: cronJob, dryRun: DRY });

describe('the runner creates checker pods pinned to their check, running its spec as written', () => {
  it('allows the checker pod it builds (defaulted volumes and env, a probe, a ServiceAccount)', async () => {
    expect(await refusal(createPod(checkerPod(check)))).toBe('allowed');
  });

  it('refuses a pod of a check name no khcheck has, owned by it and by a real khcheck', async () => {
    const ghost = checkerPod(check, (spec, pod) => {
      pod.metadata!.labels!['kuberhealthy-check-name'] = 'ghost';
      pod.metadata!.annotations!['comcast.github.io/check-name'] = 'ghost';
      pod.metadata!.ownerReferences = [
        { ...pod.metadata!.ownerReferences![0]!, name: 'ghost', uid: '00000000-0000-4000-8000-00000000dead' },
        pod.metadata!.ownerReferences![0]!,
      ];
      spec.serviceAccountName = 'powerful';
      spec.containers[0]!.securityContext = { privileged: true };
      spec.volumes = [{ name: 'root', hostPath: { path: '/' } }];
      spec.containers[0]!.volumeMounts = [{ name: 'root', mountPath: '/host' }];
    });
    expect(await refusal(createPod(ghost))).toMatch(REFUSED);
  });

  it('refuses a checker pod with a second owner (another real khcheck)', async () => {
    const twice = checkerPod(check, (_, pod) => {
      pod.metadata!.ownerReferences!.push({
        ...pod.metadata!.ownerReferences![0]!,
        name: other.name,
        uid: other.uid,
      });
    });
    expect(await refusal(createPod(twice))).toMatch(REFUSED);
  });

  it.each<[string, (p: V1PodSpec) => void]>([
    [
      'another command',
      (p) => {
        p.containers[0]!.command = ['sh', '-c', 'id'];
      },
    ],
    [
      'other arguments',
      (p) => {
        p.containers[0]!.args = ['-c', 'id'];
      },
    ],
    [
      'an added capability',
      (p) => {
        p.containers[0]!.securityContext = { capabilities: { add: ['SYS_ADMIN'] } };
      },
    ],
    [
      'a container running as root',
      (p) => {
        p.containers[0]!.securityContext = { runAsUser: 0 };
      },
    ],
    [
      'a pod security context running as root',
      (p) => {
        p.securityContext = { runAsUser: 0 };
      },
    ],
    [
      'a privileged container',
      (p) => {
        p.containers[0]!.securityContext = { privileged: true, allowPrivilegeEscalation: true };
      },
    ],
    [
      'a secret volume the check does not mount',
      (p) => void p.volumes!.push({ name: 'stolen', secret: { secretName: 'admin-token' } }),
    ],
    [
      'its configMap volume pointed at another configMap',
      (p) => {
        p.volumes![0] = { name: 'config', configMap: { name: 'other' } };
      },
    ],
    [
      'a hostPort',
      (p) => {
        p.containers[0]!.ports = [{ containerPort: 8080, hostPort: 80 }];
      },
    ],
    [
      'a nodeName',
      (p) => {
        p.nodeName = 'control-plane';
      },
    ],
    [
      'a runtimeClassName',
      (p) => {
        p.runtimeClassName = RUNTIME_CLASS;
      },
    ],
    [
      'a shared process namespace',
      (p) => {
        p.shareProcessNamespace = true;
      },
    ],
    [
      'a workingDir',
      (p) => {
        p.containers[0]!.workingDir = '/tmp';
      },
    ],
    [
      'a postStart hook',
      (p) => {
        p.containers[0]!.lifecycle = { postStart: { exec: { command: ['sh', '-c', 'id'] } } };
      },
    ],
    [
      'another probe command',
      (p) => {
        p.containers[0]!.readinessProbe = { exec: { command: ['sh', '-c', 'id'] } };
      },
    ],
    [
      'an env entry from a secret',
      (p) =>
        void p.containers[0]!.env!.push({
          name: 'TOKEN',
          valueFrom: { secretKeyRef: { name: 'admin-token', key: 'token' } },
        }),
    ],
    [
      'an envFrom secret',
      (p) => {
        p.containers[0]!.envFrom = [{ secretRef: { name: 'admin-token' } }];
      },
    ],
    [
      "a token for another audience in a volume named like the API server's token volume",
      (p) =>
        void p.volumes!.push({
          name: 'kube-api-access-cloud',
          projected: { sources: [{ serviceAccountToken: { audience: 'sts.amazonaws.com', path: 'token' } }] },
        }),
    ],
  ])('refuses its checker pod with %s', async (_, mutate) => {
    expect(await refusal(createPod(checkerPod(check, mutate)))).toMatch(REFUSED);
  });

  it('allows the checker pod of a restricted-compatible check in a restricted (Pod Security) namespace', async () => {
    expect(await refusal(createPod(checkerPod(strict)))).toBe('allowed');
    const root = checkerPod(strict, (p) => {
      p.securityContext = { runAsUser: 0 };
    });
    expect(await refusal(createPod(root))).toMatch(/^403 /);
  });
});

describe('no checker pod reaches the node unless an admin labelled its namespace', () => {
  it.each<[string, (p: V1PodSpec) => void]>([
    [
      'a privileged container',
      (p) => {
        p.containers[0]!.securityContext = { privileged: true };
      },
    ],
    [
      'a hostPath volume of /',
      (p) => {
        p.volumes = [{ name: 'root', hostPath: { path: '/' } }];
        p.containers[0]!.volumeMounts = [{ name: 'root', mountPath: '/host' }];
      },
    ],
    [
      "the host's network",
      (p) => {
        p.hostNetwork = true;
      },
    ],
    [
      "the host's PID namespace",
      (p) => {
        p.hostPID = true;
      },
    ],
    [
      'an added SYS_ADMIN capability',
      (p) => {
        p.containers[0]!.securityContext = { capabilities: { add: ['SYS_ADMIN'] } };
      },
    ],
    [
      'a privileged init container',
      (p) => {
        p.initContainers = [{ name: 'init', image: 'busybox', securityContext: { privileged: true } }];
      },
    ],
    [
      'a host port',
      (p) => {
        p.containers[0]!.ports = [{ containerPort: 8080, hostPort: 8080 }];
      },
    ],
    [
      'a gitRepo volume (git run by the kubelet on the node)',
      (p) => {
        p.volumes = [{ name: 'repo', gitRepo: { repository: 'https://example.com/x.git' } }];
        p.containers[0]!.volumeMounts = [{ name: 'repo', mountPath: '/repo' }];
      },
    ],
    [
      'an unconfined seccomp profile',
      (p) => {
        p.securityContext = { seccompProfile: { type: 'Unconfined' } };
      },
    ],
    [
      "an unconfined AppArmor profile (the pod's)",
      (p) => {
        p.securityContext = { appArmorProfile: { type: 'Unconfined' } };
      },
    ],
    [
      "an unconfined AppArmor profile (a container's)",
      (p) => {
        p.containers[0]!.securityContext = { appArmorProfile: { type: 'Unconfined' } };
      },
    ],
    [
      'the SELinux type of a super-privileged container',
      (p) => {
        p.securityContext = { seLinuxOptions: { type: 'spc_t' } };
      },
    ],
    [
      'an SELinux user',
      (p) => {
        p.containers[0]!.securityContext = { seLinuxOptions: { user: 'system_u' } };
      },
    ],
    [
      'an unsafe sysctl',
      (p) => {
        p.securityContext = { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] };
      },
    ],
    [
      'a node of its choosing (no scheduler, no NoSchedule taints)',
      (p) => {
        p.nodeName = 'control-plane';
      },
    ],
    [
      "a toleration of the control plane's taint",
      (p) => {
        p.tolerations = [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }];
      },
    ],
    [
      'a toleration of every taint',
      (p) => {
        p.tolerations = [{ operator: 'Exists' }];
      },
    ],
    [
      'the system-node-critical priority (preempting any workload)',
      (p) => {
        p.priorityClassName = 'system-node-critical';
      },
    ],
  ])('refuses a pod of a check that does not exist with %s, saying what opens it', async (_, mutate) => {
    const answer = await refusal(createPod(ghostPod(mutate)));
    expect(answer).toMatch(REFUSED);
    expect(answer).toContain('khrun-runner-node-access');
    expect(answer).toContain(`kubectl label namespace ${checks} khrun.dev/privileged-checks=allowed`);
  });

  it('refuses the unconfined AppArmor annotation too (Pod Security reads it as the field)', async () => {
    const pod = ghostPod(() => {});
    pod.metadata!.annotations!['container.apparmor.security.beta.kubernetes.io/main'] = 'unconfined';
    const answer = await refusal(createPod(pod));
    expect(answer).toMatch(REFUSED);
    expect(answer).toContain('khrun-runner-node-access');
  });

  it('admits the pod of a check that does not exist when it asks for nothing of the node (the garbage collector deletes it)', async () => {
    expect(await refusal(createPod(ghostPod(() => {})))).toBe('allowed');
  });

  it("refuses a check's own privileged spec in an unlabelled namespace, and runs it as written in a labelled one", async () => {
    const answer = await refusal(createPod(checkerPod(hostCheck)));
    expect(answer).toMatch(REFUSED);
    expect(answer).toContain('khrun-runner-node-access');
    expect(await refusal(createPod(checkerPod(openedHostCheck)))).toBe('allowed');
    // The label opens the node, not the check's spec: policy 2 still holds the pod to it.
    const more = checkerPod(openedHostCheck, (p) => {
      p.hostPID = true;
    });
    expect(await refusal(createPod(more))).toMatch(REFUSED);
  });

  it('the runner cannot label a namespace to open it', async () => {
    const answer = await refusal(
      runner
        .makeApiClient(CoreV1Api)
        .patchNamespace(
          { name: checks, body: { metadata: { labels: { 'khrun.dev/privileged-checks': 'allowed' } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
    );
    expect(answer).toMatch(/^403 /);
  });
});

describe("the policies' parameters cannot be rewritten by the identities they constrain", () => {
  const hcApi = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
  const jobApi = { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL };
  const PRIVILEGED = {
    containers: [{ name: 'main', image: 'busybox', securityContext: { privileged: true } }],
    volumes: [{ name: 'root', hostPath: { path: '/' } }],
  };
  let hc: HealthCheck;
  let job: { metadata: { name: string }; spec: Record<string, unknown> };

  beforeAll(async () => {
    const custom = admin.makeApiClient(CustomObjectsApi);
    hc = (await custom.createNamespacedCustomObject({
      ...hcApi,
      namespace: checks,
      body: {
        apiVersion: HC_API_VERSION,
        kind: HC_KIND,
        metadata: { name: 'route-hc' },
        spec: {
          runInterval: '10m',
          timeout: '30s',
          podSpec: { spec: { containers: [{ name: 'main', image: 'busybox', command: ['true'] }] } },
        },
      },
    })) as HealthCheck;
    job = (await custom.createNamespacedCustomObject({
      ...jobApi,
      namespace: checks,
      body: {
        apiVersion: `${KH_GROUP}/${KH_VERSION}`,
        kind: KHJOB_KIND,
        metadata: { name: 'route-job' },
        spec: {
          timeout: '30s',
          podSpec: { containers: [{ name: 'main', image: 'busybox', command: ['true'] }] },
        },
      },
    })) as typeof job;
  });

  const replace = (kc: KubeConfig, api: typeof hcApi, body: { metadata: { name: string } }) =>
    kc.makeApiClient(CustomObjectsApi).replaceNamespacedCustomObject({
      ...api,
      namespace: checks,
      name: body.metadata.name,
      body,
      dryRun: DRY,
    });

  it.each([
    ['khrun-runner', () => runner],
    ['khrun-tick', () => tick],
  ])(
    "refuses %s a HealthCheck whose podSpec it rewrote, and allows it khrun's annotations",
    async (_, kc) => {
      const rewritten = structuredClone(hc);
      rewritten.spec.podSpec = { spec: PRIVILEGED } as HealthCheck['spec']['podSpec'];
      expect(await refusal(replace(kc(), hcApi, rewritten))).toMatch(REFUSED);
      const annotated = structuredClone(hc);
      annotated.metadata.annotations = { ...annotated.metadata.annotations, 'khrun.dev/lease': 'x' };
      expect(await refusal(replace(kc(), hcApi, annotated))).toBe('allowed');
    },
  );

  it("refuses the runner a check's silence or notification policy (notify.khrun.dev/), set or removed; a person may", async () => {
    const silenced = structuredClone(hc);
    silenced.metadata.annotations = {
      ...silenced.metadata.annotations,
      'notify.khrun.dev/silence': '2030-01-01T00:00:00Z',
    };
    expect(await refusal(replace(runner, hcApi, silenced))).toMatch(
      /changes no notify\.khrun\.dev\/ annotation/,
    );
    const quieted = structuredClone(job) as typeof job & {
      metadata: { annotations?: Record<string, string> };
    };
    quieted.metadata.annotations = { 'notify.khrun.dev/channels': 'none' };
    expect(await refusal(replace(runner, jobApi, quieted))).toMatch(
      /changes no notify\.khrun\.dev\/ annotation/,
    );
    expect(await refusal(replace(admin, hcApi, silenced))).toBe('allowed');
  });

  it("refuses the runner a khjob whose podSpec it rewrote, and allows it the khjob's phase", async () => {
    const rewritten = structuredClone(job);
    rewritten.spec.podSpec = PRIVILEGED;
    expect(await refusal(replace(runner, jobApi, rewritten))).toMatch(REFUSED);
    const running = structuredClone(job);
    running.spec.phase = 'Running';
    expect(await refusal(replace(runner, jobApi, running))).toBe('allowed');
  });
});

describe('the tick and sync run the runner template as written, whole', () => {
  const ROUTES: Array<[string, (p: V1PodSpec) => void]> = [
    [
      'a postStart hook',
      (p) => {
        p.containers[0]!.lifecycle = { postStart: { exec: { command: ['sh', '-c', 'id'] } } };
      },
    ],
    [
      'a liveness probe command',
      (p) => {
        p.containers[0]!.livenessProbe = { exec: { command: ['sh', '-c', 'id'] } };
      },
    ],
    [
      'a workingDir',
      (p) => {
        p.containers[0]!.workingDir = '/tmp';
      },
    ],
    [
      'a hostPort',
      (p) => {
        p.containers[0]!.ports = [{ containerPort: 8080, hostPort: 80 }];
      },
    ],
    [
      'a nodeName',
      (p) => {
        p.nodeName = 'control-plane';
      },
    ],
    [
      'a runtimeClassName',
      (p) => {
        p.runtimeClassName = RUNTIME_CLASS;
      },
    ],
  ];

  it('allows the Job and the CronJob khrun makes', async () => {
    expect(await refusal(createJob(runnerJob()))).toBe('allowed');
    expect(await refusal(createCron(cron()))).toBe('allowed');
  });

  it.each(ROUTES)('refuses the tick a Job with %s', async (_, mutate) => {
    expect(await refusal(createJob(runnerJob(mutate)))).toMatch(REFUSED);
  });

  it.each(ROUTES)('refuses sync a CronJob with %s', async (_, mutate) => {
    expect(await refusal(createCron(cron(mutate)))).toMatch(REFUSED);
  });

  it("refuses sync deleting a CronJob khrun did not make, and allows deleting khrun's", async () => {
    const batch = admin.makeApiClient(BatchV1Api);
    const theirs = await batch.createNamespacedCronJob({
      namespace: checks,
      body: {
        metadata: { name: 'backup' },
        spec: {
          schedule: '0 0 * * *',
          suspend: true,
          jobTemplate: {
            spec: {
              template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } },
            },
          },
        },
      },
    });
    const ours = await batch.createNamespacedCronJob({ namespace: checks, body: cron() });
    const remove = (name: string) =>
      sync.makeApiClient(BatchV1Api).deleteNamespacedCronJob({ namespace: checks, name, dryRun: DRY });
    expect(await refusal(remove(theirs.metadata!.name!))).toMatch(REFUSED);
    expect(await refusal(remove(ours.metadata!.name!))).toBe('allowed');
  });
});
