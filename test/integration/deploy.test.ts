import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type V1Job,
  type V1Pod,
  type V1PodDisruptionBudget,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOY_REPORT_KEY_SECRET } from '../../infra/helm/render-deploy.ts';
import { runnerJobChecks } from '../../lib/schedule/batch-job.ts';
import { readDispatchClaim } from '../../lib/state/dispatch-claim.ts';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhState,
} from '../../lib/state/resources.ts';
import { adminKubeConfig, uniqueName, waitFor } from './helpers/cluster.ts';
import {
  applyDeploy,
  buildTestBundles,
  DEPLOY_NAMESPACE,
  kubectl,
  reportKeyAnswers,
  reportKeyOfSecret,
  SHIPPED_IMAGE,
  waitForHttp,
} from './helpers/deploy.ts';

// infra/deploy applied for real and unchanged (kubectl apply -k of a kustomization that only adds the
// examples and serve components, as docs/install.md says a user does): no command rewritten, no patch. The process
// kubelet runs the shipped image (ghcr.io/khrun/khrun) as the local build of its ENTRYPOINT, as a node runs the image. A
// person starts a tick at once (kubectl create job --from=cronjob/khrun-tick), the CronJob keeps ticking
// every minute, and everything after that is done by the cluster: tick pods (ServiceAccount khrun-tick)
// dispatch one Job per due check from the khrun-runner PodTemplate; each runner pod (ServiceAccount
// khrun-runner) runs its check, the checker reports, and the outcome is recorded. The serve component's
// report key Secret is created first, as its kustomization.yaml says (applyDeploy).

const kc = adminKubeConfig();
const batch = kc.makeApiClient(BatchV1Api);
const core = kc.makeApiClient(CoreV1Api);
const ns = DEPLOY_NAMESPACE;
const EXAMPLES = {
  'example-success': 'Succeeded',
  'example-failure': 'Failed',
  'example-never-reports': 'TimedOut',
};

beforeAll(async () => {
  await buildTestBundles();
  await applyDeploy({ name: 'deploy', components: ['examples', 'serve'], tick: 'scheduled' });
}, 180_000);

afterAll(async () => {
  // Unscoped, the tick would dispatch the khchecks of the rest of the suite: it goes with the examples.
  await kubectl(['delete', 'cronjob', 'khrun-tick', '-n', ns, '--ignore-not-found']).catch(() => undefined);
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const name of Object.keys(EXAMPLES)) {
    await custom
      .deleteNamespacedCustomObject({
        group: KH_GROUP,
        version: KH_VERSION,
        plural: KHCHECK_PLURAL,
        namespace: ns,
        name,
      })
      .catch(() => undefined);
  }
});

/** Whether a runner Job runs an example check (alone, or in a batch with others due in the same tick). */
const runsAnExample = (j: V1Job) =>
  runnerJobChecks(j.metadata).some((c) => c.namespace === ns && Object.keys(EXAMPLES).includes(c.name));

/** The runner Jobs of the example checks (the unscoped tick may dispatch other namespaces' checks too). */
async function exampleRunnerJobs(): Promise<V1Job[]> {
  const jobs = await batch.listNamespacedJob({
    namespace: ns,
    labelSelector: 'app.kubernetes.io/component=run',
  });
  return jobs.items.filter(runsAnExample);
}

describe('kubectl apply -k infra/deploy unchanged, then the tick CronJob path end to end', () => {
  it('ticks (one by hand, then the CronJob) dispatch one runner Job per due check; each records its outcome', async () => {
    const tickJob = uniqueName('tick-manual');
    await kubectl(['create', 'job', `--from=cronjob/khrun-tick`, tickJob, '-n', ns]);
    const done = await waitFor<V1Job, V1Job>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      fieldSelector: `metadata.name=${tickJob}`,
      decide: (items) => {
        const job = items.get(`${ns}/${tickJob}`);
        return job?.status?.succeeded || job?.status?.failed ? job : undefined;
      },
      timeoutMs: 60_000,
      description: `the tick Job ${tickJob} to finish`,
    });
    const tickPods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${tickJob}` });
    // A failed tick says why in its own log (which check's dispatch failed): shown with the assertion.
    const tickLog = done.status?.succeeded
      ? ''
      : await core
          .readNamespacedPodLog({ namespace: ns, name: tickPods.items[0]?.metadata?.name ?? '' })
          .catch((e: unknown) => `(no log: ${String(e)})`);
    expect(done.status?.succeeded, `${JSON.stringify(done.status)}\n${tickLog}`).toBe(1);
    expect(tickPods.items[0]?.spec?.serviceAccountName).toBe('khrun-tick');
    // The shipped container: the image and its args, no command (the kubelet runs the image's ENTRYPOINT).
    expect(tickPods.items[0]?.spec?.containers[0]).toMatchObject({ image: SHIPPED_IMAGE, args: ['tick'] });
    expect(tickPods.items[0]?.spec?.containers[0]?.command).toBeUndefined();

    const states = await waitFor<KhState, Map<string, KhState>>(kc, {
      path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/${KHSTATE_PLURAL}`,
      decide: (items) => {
        const found = new Map<string, KhState>();
        for (const name of Object.keys(EXAMPLES)) {
          const state = items.get(`${ns}/${name}`) ?? null;
          if (readLastOutcome(state)) found.set(name, state!);
        }
        return found.size === Object.keys(EXAMPLES).length ? found : undefined;
      },
      // A check that never ran is due at its creation plus a jitter of up to a minute: the manual tick
      // dispatches those already due, the CronJob's next ticks the others.
      timeoutMs: 180_000,
      description: 'outcomes of the three example checks',
    });

    for (const [name, kind] of Object.entries(EXAMPLES)) {
      const state = states.get(name)!;
      expect(readLastOutcome(state)?.kind, name).toBe(kind);
      const claim = readDispatchClaim(state);
      // Its own Job, or a batch's when other checks were due in the same tick (KHRUN_BATCH_SIZE, default 50).
      expect(claim?.ref, name).toMatch(
        new RegExp(`^khrun-(run-${name}-[0-9a-z]+|batch-[0-9a-z]+-[0-9a-f]{6}-[0-9]+)$`),
      );
      // Written by a tick pod: the one started by hand or one the CronJob started.
      expect(claim?.by, name).toMatch(new RegExp(`^(${tickJob}|khrun-tick-[0-9]+)-[0-9a-z]+$`));
      // Exactly one runner Job for the check, and it is the one the claim names.
      const jobs = (await exampleRunnerJobs()).filter((j) =>
        runnerJobChecks(j.metadata).some((c) => c.namespace === ns && c.name === name),
      );
      expect(jobs.map((j) => j.metadata?.name)).toEqual([claim?.ref]);
      const job = jobs[0]!;
      // The examples run every 5 minutes: a finished Job stays one interval (lib/schedule/job-retention.ts).
      expect(job.spec).toMatchObject({ backoffLimit: 0, ttlSecondsAfterFinished: 300 });
      const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${claim?.ref}` });
      const runnerPod = pods.items[0] as V1Pod;
      expect(runnerPod.spec?.serviceAccountName).toBe('khrun-runner');
      expect(runnerPod.spec?.containers[0]).toMatchObject({
        image: SHIPPED_IMAGE,
        args: ['run', '--output', 'json'],
      });
      expect(runnerPod.spec?.containers[0]?.command).toBeUndefined();
      // The runner wrote its own pod name (POD_NAME from the downward API) as AuthoritativePod.
      expect(state.spec.AuthoritativePod).toBe(runnerPod.metadata?.name);
    }
    expect(states.get('example-failure')?.spec.Errors).toEqual([
      'example failure: the widget endpoint answered 503',
    ]);
    expect(states.get('example-never-reports')?.spec.Errors[0]).toMatch(
      /timed out waiting for checker pod to report in/,
    );

    // The runner Jobs complete (exit 0: a failed check is data, not a runner failure).
    const claimed = new Set([...states.values()].map((s) => readDispatchClaim(s)?.ref));
    await waitFor<V1Job, true>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      labelSelector: 'app.kubernetes.io/component=run',
      decide: (items) => {
        const ours = [...items.values()].filter(runsAnExample);
        return ours.length === claimed.size &&
          ours.every((j) => claimed.has(j.metadata?.name) && j.status?.succeeded === 1)
          ? true
          : undefined;
      },
      timeoutMs: 60_000,
      description: 'the runner Jobs of the three examples to succeed',
    });
  }, 300_000);

  it('the CronJob ticks by itself, and a tick after the runs finds nothing due', async () => {
    const before = (await exampleRunnerJobs()).map((j) => j.metadata?.name).sort();
    const startedMs = Date.now();
    // The next tick the CronJob controller starts from now on (within a minute), and its success.
    const scheduled = await waitFor<V1Job, V1Job>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      labelSelector: 'app.kubernetes.io/component=tick',
      decide: (items) =>
        [...items.values()].find(
          (j) =>
            // Named khrun-tick-<minute> by the CronJob controller (a Job made by hand has its own name).
            /^khrun-tick-[0-9]+$/.test(j.metadata?.name ?? '') &&
            Date.parse(String(j.metadata?.creationTimestamp)) >= startedMs - 1_000 &&
            j.status?.succeeded === 1,
        ),
      timeoutMs: 120_000,
      description: 'a tick Job of the CronJob, started after the runs, to succeed',
    });
    expect(scheduled.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'CronJob', name: 'khrun-tick' });
    const after = (await exampleRunnerJobs()).map((j) => j.metadata?.name).sort();
    expect(after).toEqual(before);
  }, 180_000);

  it('the server Deployment serves health, the examples in its metrics and, with the serve component, the report endpoint on its pods, signed reports only', async () => {
    const pods = await waitFor<V1Pod, V1Pod[]>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: 'app.kubernetes.io/component=server',
      // The pods of the serve component's Deployment (with the key), none left of another: a file that
      // applied the base before (its server takes no reports) leaves pods that this apply rolls over.
      decide: (items) => {
        const pods = [...items.values()];
        const keyed = (p: V1Pod) => p.spec?.volumes?.some((v) => v.name === 'report-key') === true;
        const running = pods.filter(
          (p) =>
            p.status?.phase === 'Running' && p.status.podIP && !p.metadata?.deletionTimestamp && keyed(p),
        );
        return running.length === 2 && pods.length === 2 ? running : undefined;
      },
      timeoutMs: 120_000,
      description: 'two running khrun serve pods with the report key, and no other',
    });
    // The key the user's Secret holds (applyDeploy made it as the component's kustomization.yaml says).
    const key = await reportKeyOfSecret(kc, ns, DEPLOY_REPORT_KEY_SECRET);
    for (const pod of pods) {
      expect(pod.spec?.serviceAccountName).toBe('khrun-server');
      const base = `http://${pod.status?.podIP}:8080`;
      const health = await waitForHttp(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      // Status and metrics, read-only, of the examples the first test recorded (served by default).
      const metrics = await (await fetch(`${base}/metrics`)).text();
      for (const [name, kind] of Object.entries(EXAMPLES)) {
        const ok = kind === 'Succeeded' ? '1' : '0';
        expect(metrics, name).toMatch(
          new RegExp(`^kuberhealthy_check\\{check="${ns}/${name}",namespace="${ns}",status="${ok}",`, 'm'),
        );
        expect(metrics, name).toMatch(
          new RegExp(`^kuberhealthy_check_last_dispatch_timestamp_seconds\\{check="${ns}/${name}"`, 'm'),
        );
      }
      // It started with the Secret's key (without a key and the unsigned opt-in it would not start): an
      // unsigned report and one signed with another key are refused at once, one signed with this key gets
      // as far as the khstate of its check (none: no run is active).
      const answers = await reportKeyAnswers(base, key, ns);
      expect(answers.unsigned.status, answers.unsigned.text).toBe(400);
      expect(answers.unsigned.text).toMatch(/takes reports only at the signed URL/);
      expect(answers.otherKey.status, answers.otherKey.text).toBe(400);
      expect(answers.otherKey.text).toMatch(/the token in the reporting URL is not valid/);
      expect(answers.ownKey.status, answers.ownKey.text).toBe(400);
      expect(answers.ownKey.text).toMatch(/has no khstate: no run is active/);
    }
    const service = await core.readNamespacedService({ name: 'khrun-server', namespace: ns });
    expect(service.spec?.ports?.[0]).toMatchObject({ port: 80, targetPort: 'http' });
    // Two server pods: a PodDisruptionBudget lets a drain take one at a time (the disruption controller
    // counts the pods it covers).
    const pdb = await waitFor<V1PodDisruptionBudget, V1PodDisruptionBudget>(kc, {
      path: `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`,
      fieldSelector: 'metadata.name=khrun-server',
      decide: (items) => {
        const found = items.get(`${ns}/khrun-server`);
        return found?.status?.expectedPods === 2 && found.status.disruptionsAllowed === 1 ? found : undefined;
      },
      timeoutMs: 60_000,
      description: 'the PodDisruptionBudget khrun-server to cover the two server pods',
    });
    expect(pdb.spec?.maxUnavailable).toBe(1);
    expect(pdb.status?.disruptionsAllowed).toBe(1);
  }, 180_000);
});
