import {
  BatchV1Api,
  CoreV1Api,
  type CoreV1Event,
  CustomObjectsApi,
  type KubeConfig,
  type V1CronJob,
  type V1Job,
  type V1JobSpec,
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
import { asJobPod } from '../../lib/job/job-writes.ts';
import { KHJOB_KIND, KHJOB_PLURAL } from '../../lib/job/khjob.ts';
import { outcomeEvent } from '../../lib/run/events.ts';
import { checkCronJob } from '../../lib/schedule/check-cronjob.ts';
import { DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import { KH_GROUP, KH_VERSION, type ValidCheck } from '../../lib/state/resources.ts';
import { pollUntil, REFUSED, refusal } from './helpers/admission.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { applyDeploy, DEPLOY_NAMESPACE, serviceAccountKubeConfig } from './helpers/deploy.ts';
import { createCheck } from './helpers/khrun.ts';

// Routes found by red-teaming khrun's identities beyond the issue's list, each tried on the real API server
// with TokenRequest tokens of the shipped ServiceAccounts (dry runs through the whole admission chain), each
// admitted before the rule that now refuses it: Events about other objects, owner references and finalizers
// on checks (the garbage collector deletes a check whose owner is missing), runner Jobs that run many pods or
// adopt others, and a real check's pod with its lifetime, names, DNS or tolerations changed. The verbs RBAC
// alone refuses are in rbac.test.ts.

const admin = adminKubeConfig();
const ns = DEPLOY_NAMESPACE;
const DRY = 'All';
let checks: string;
let runner: KubeConfig;
let tick: KubeConfig;
let sync: KubeConfig;
let check: ValidCheck;
let template: V1PodTemplateSpec;
let hc: HealthCheck;
let job: { apiVersion: string; kind: string; metadata: { name: string; uid: string }; spec: object };

const hcApi = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
const jobApi = { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL };

beforeAll(async () => {
  await applyDeploy({ name: 'admission-redteam', components: ['sync'], suspend: ['khrun-sync'] });
  checks = await freshNamespace(admin, 'redteam');
  const source = await createCheck(admin, checks, 'rt-check', {
    containers: [{ name: 'main', image: 'busybox', command: ['true'] }],
  });
  const valid = validateCheck(source);
  if (!valid.ok) throw new Error(valid.reason);
  check = valid.check;
  const custom = admin.makeApiClient(CustomObjectsApi);
  hc = (await custom.createNamespacedCustomObject({
    ...hcApi,
    namespace: checks,
    body: {
      apiVersion: HC_API_VERSION,
      kind: HC_KIND,
      metadata: { name: 'rt-hc' },
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
      metadata: { name: 'rt-job' },
      spec: {
        timeout: '30s',
        podSpec: { containers: [{ name: 'main', image: 'busybox', command: ['true'] }] },
      },
    },
  })) as typeof job;
  template = (
    await admin.makeApiClient(CoreV1Api).readNamespacedPodTemplate({ name: 'khrun-runner', namespace: ns })
  ).template!;
  runner = await serviceAccountKubeConfig(admin, ns, 'khrun-runner');
  tick = await serviceAccountKubeConfig(admin, ns, 'khrun-tick');
  sync = await serviceAccountKubeConfig(admin, ns, 'khrun-sync');
  const ready = await pollUntil(
    async () =>
      (await refusal(createPod(checkerPod()))) === 'allowed' &&
      REFUSED.test(
        await refusal(
          createPod(
            checkerPod((p) => {
              p.hostname = 'x';
            }),
          ),
        ),
      ) &&
      REFUSED.test(await refusal(createEvent(eventAbout({ apiVersion: 'v1', kind: 'Pod', name: 'x' })))) &&
      REFUSED.test(
        await refusal(
          createJob(
            runnerJob((j) => {
              j.parallelism = 2;
            }),
          ),
        ),
      ) &&
      REFUSED.test(
        await refusal(
          createCron(
            cron((j) => {
              j.parallelism = 2;
            }),
          ),
        ),
      ),
    60_000,
  );
  if (!ready) console.warn('the admission policies were not in effect within 60 s');
}, 180_000);

afterAll(async () => {
  await dropNamespace(admin, checks);
});

function checkerPod(mutate: (spec: V1PodSpec, pod: V1Pod) => void = () => {}): V1Pod {
  const pod = buildCheckerPod({
    check,
    runUuid: '00000000-0000-4000-8000-0000000000e1',
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

/** The Event the runner records for an outcome of rt-check, about `about` instead when given. */
function eventAbout(about?: CoreV1Event['involvedObject']): CoreV1Event {
  const event = outcomeEvent({
    namespace: checks,
    name: check.name,
    uid: check.uid,
    runUuid: '00000000-0000-4000-8000-0000000000e2',
    runner: 'khrun-run-x',
    atMs: Date.now(),
    outcome: { kind: 'Succeeded', ok: true, errors: [], node: '', durationMs: 1 },
  });
  if (about) event.involvedObject = { namespace: checks, ...about };
  return event;
}

const createEvent = (event: CoreV1Event, namespace = checks) =>
  runner.makeApiClient(CoreV1Api).createNamespacedEvent({ namespace, body: event, dryRun: DRY });

function runnerJob(mutate: (spec: V1JobSpec) => void = () => {}): V1Job {
  const spec = runJobSpec(
    template,
    { namespace: checks, name: check.name, timeoutMs: 60_000 },
    DEFAULT_RUN_JOB_OPTIONS,
  );
  mutate(spec);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'khrun-run-redteam', namespace: ns },
    spec,
  };
}
function cron(mutate: (spec: V1JobSpec) => void = () => {}): V1CronJob {
  const { cronJob } = checkCronJob(check.source, template, DEFAULT_RUN_JOB_OPTIONS);
  mutate(cronJob.spec!.jobTemplate.spec!);
  return cronJob;
}

const createJob = (body: V1Job) =>
  tick.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns, body, dryRun: DRY });
const createCron = (body: V1CronJob) =>
  sync
    .makeApiClient(BatchV1Api)
    .createNamespacedCronJob({ namespace: body.metadata!.namespace!, body, dryRun: DRY });

describe("the runner's Events are about its checks only", () => {
  it('allows the outcome Event on the khcheck', async () => {
    expect(await refusal(createEvent(eventAbout()))).toBe('allowed');
  });

  it.each<[string, CoreV1Event['involvedObject']]>([
    ['a pod', { apiVersion: 'v1', kind: 'Pod', name: 'database-0' }],
    ['a Deployment', { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }],
    ['a Secret', { apiVersion: 'v1', kind: 'Secret', name: 'db-password' }],
  ])('refuses an Event about %s', async (_, about) => {
    expect(await refusal(createEvent(eventAbout(about)))).toMatch(REFUSED);
  });

  it('refuses an Event about a node (in default, where Events of cluster objects go)', async () => {
    const event = eventAbout({ apiVersion: 'v1', kind: 'Node', name: 'node-1', namespace: '' });
    event.metadata = { ...event.metadata, namespace: 'default' };
    expect(await refusal(createEvent(event, 'default'))).toMatch(REFUSED);
  });

  it('refuses an Event on its khcheck that names another object as related', async () => {
    const event = eventAbout();
    event.related = { apiVersion: 'v1', kind: 'Pod', name: 'database-0', namespace: checks };
    expect(await refusal(createEvent(event))).toMatch(REFUSED);
  });

  it("leaves an Event about another namespace's object to the API server, which refuses it", async () => {
    const about = {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: 'KuberhealthyCheck',
      name: 'x',
      namespace: 'default',
    };
    expect(await refusal(createEvent(eventAbout(about)))).toMatch(/^422 .*does not match event.namespace/s);
  });
});

describe("no khrun identity changes a check's owners or finalizers", () => {
  const replace = (kc: KubeConfig, api: typeof hcApi, body: { metadata: { name: string } }) =>
    kc.makeApiClient(CustomObjectsApi).replaceNamespacedCustomObject({
      ...api,
      namespace: checks,
      name: body.metadata.name,
      body,
      dryRun: DRY,
    });
  /** An owner that does not exist: the garbage collector would delete the check at once. */
  const dangling = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'gone',
    uid: '00000000-0000-4000-8000-00000000dead',
  };

  it.each([
    ['khrun-tick', () => tick],
    ['khrun-runner', () => runner],
  ])('refuses %s a HealthCheck with a finalizer or an owner reference added', async (_, kc) => {
    const current = (await admin
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...hcApi, namespace: checks, name: hc.metadata.name })) as HealthCheck;
    const held = structuredClone(current);
    held.metadata.finalizers = ['example.com/hold'];
    expect(await refusal(replace(kc(), hcApi, held))).toMatch(
      /^403 .*khrun-check-specs.*no owner reference or finalizer/s,
    );
    // The local cluster runs the OwnerReferencesPermissionEnforcement plugin (as OpenShift does), which
    // refuses an owner reference to whoever may not delete the object, before any policy; where it is off
    // (upstream's default), policy 6 refuses it (its rule: deploy-policies.test.ts).
    const owned = structuredClone(current);
    owned.metadata.ownerReferences = [dangling];
    expect(await refusal(replace(kc(), hcApi, owned))).toMatch(
      /^403 .*(khrun-check-specs|cannot set an ownerRef on a resource you can't delete)/s,
    );
  });

  it('refuses the runner a khjob with a finalizer or an owner reference added', async () => {
    const current = (await admin
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...jobApi, namespace: checks, name: job.metadata.name })) as typeof job & {
      metadata: { ownerReferences?: unknown[]; finalizers?: string[] };
    };
    const held = structuredClone(current);
    held.metadata.finalizers = ['example.com/hold'];
    expect(await refusal(replace(runner, jobApi, held))).toMatch(/^403 .*khrun-check-specs/s);
    const owned = structuredClone(current);
    owned.metadata.ownerReferences = [dangling];
    expect(await refusal(replace(runner, jobApi, owned))).toMatch(
      /^403 .*(khrun-check-specs|cannot set an ownerRef on a resource you can't delete)/s,
    );
  });
});

describe("a real check's pod keeps its check's lifetime, names, DNS and placement", () => {
  it.each<[string, (p: V1PodSpec) => void]>([
    [
      'an activeDeadlineSeconds',
      (p) => {
        p.activeDeadlineSeconds = 999_999;
      },
    ],
    [
      'a long termination grace period',
      (p) => {
        p.terminationGracePeriodSeconds = 999_999;
      },
    ],
    [
      'a hostname',
      (p) => {
        p.hostname = 'database-0';
      },
    ],
    [
      'a subdomain (a headless Service)',
      (p) => {
        p.subdomain = 'database';
      },
    ],
    [
      'host aliases',
      (p) => {
        p.hostAliases = [{ ip: '10.0.0.9', hostnames: ['vault.internal'] }];
      },
    ],
    [
      'DNS settings',
      (p) => {
        p.dnsConfig = { nameservers: ['10.0.0.9'] };
      },
    ],
    [
      "the node's DNS policy",
      (p) => {
        p.dnsPolicy = 'Default';
      },
    ],
    [
      "a toleration of a dedicated pool's taint",
      (p) => {
        p.tolerations = [{ key: 'dedicated', value: 'payments', effect: 'NoSchedule' }];
      },
    ],
    [
      'an os',
      (p) => {
        p.os = { name: 'linux' };
      },
    ],
    [
      'a scheduling gate',
      (p) => {
        p.schedulingGates = [{ name: 'example.com/hold' }];
      },
    ],
  ])('refuses it with %s', async (_, mutate) => {
    const answer = await refusal(createPod(checkerPod(mutate)));
    expect(answer).toMatch(REFUSED);
  });

  it('refuses a khjob-shaped pod in a namespace without khjobs, and a pod as khrun-runner in its own namespace', async () => {
    const empty = await freshNamespace(admin, 'redteam-nojobs');
    try {
      await createCheck(admin, empty, 'rt-check', { containers: [{ name: 'main', image: 'busybox' }] });
      const pod = asJobPod(checkerPod(), {
        ...job,
        metadata: { ...job.metadata, namespace: empty },
      } as never);
      pod.metadata!.namespace = empty;
      expect(await refusal(createPod(pod))).toMatch(REFUSED);
    } finally {
      await dropNamespace(admin, empty);
    }
    const own = checkerPod((p, pod) => {
      pod.metadata!.namespace = ns;
      p.serviceAccountName = 'khrun-runner';
    });
    expect(await refusal(createPod(own))).toMatch(/^(403|422) /);
  });

  it('leaves ephemeral containers and overhead to the API server, which refuses them on create', async () => {
    const withEphemeral = checkerPod((p) => {
      p.ephemeralContainers = [{ name: 'debug', image: 'busybox', command: ['sh'] }];
    });
    expect(await refusal(createPod(withEphemeral))).toMatch(/^422 .*cannot be set on create/s);
    // The subresource that adds them to a running pod is RBAC's to refuse (rbac.test.ts).
    const withOverhead = checkerPod((p) => {
      p.overhead = { cpu: '1' };
    });
    expect(await refusal(createPod(withOverhead))).toMatch(
      /^403 .*Pod Overhead set without corresponding RuntimeClass/s,
    );
  });
});

describe('the tick and sync run one runner pod at a time, as khrun builds its Jobs', () => {
  const ROUTES: Array<[string, (j: V1JobSpec) => void]> = [
    [
      'parallelism 50',
      (j) => {
        j.parallelism = 50;
      },
    ],
    [
      'completions 50',
      (j) => {
        j.completions = 50;
      },
    ],
    [
      'retries (backoffLimit 6)',
      (j) => {
        j.backoffLimit = 6;
      },
    ],
    [
      'a hand-picked selector (adopting the pods it matches)',
      (j) => {
        j.manualSelector = true;
        j.selector = { matchLabels: { 'app.kubernetes.io/name': 'khrun' } };
      },
    ],
    [
      'an unconfined AppArmor annotation on its pod',
      (j) => {
        j.template.metadata!.annotations = {
          ...j.template.metadata!.annotations,
          'container.apparmor.security.beta.kubernetes.io/runner': 'unconfined',
        };
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

  it("leaves a CronJob's hand-picked selector to the API server, which refuses it", async () => {
    const body = cron((j) => {
      j.manualSelector = true;
      j.selector = { matchLabels: { 'app.kubernetes.io/name': 'khrun' } };
    });
    expect(await refusal(createCron(body))).toMatch(/^422 .*manualSelector/s);
  });

  it.each(ROUTES.filter(([what]) => !what.startsWith('a hand-picked selector')))(
    'refuses sync a CronJob with %s',
    async (_, mutate) => {
      expect(await refusal(createCron(cron(mutate)))).toMatch(REFUSED);
    },
  );
});
