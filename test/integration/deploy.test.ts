import { BatchV1Api, CoreV1Api, CustomObjectsApi, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { applyDeploy, buildTestBundles, DEPLOY_NAMESPACE, kubectl } from './helpers/deploy.ts';

// infra/deploy applied for real (kubectl apply -k), the tick's Job created from its CronJob as a person
// would (kubectl create job --from=cronjob/khrun-tick), and everything after that done by the cluster:
// the tick pod (ServiceAccount khrun-tick) dispatches one Job per due check from the khrun-runner
// PodTemplate; each runner pod (ServiceAccount khrun-runner) runs its check to a recorded outcome.

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
  const dist = await buildTestBundles();
  await applyDeploy({ name: 'deploy', distDir: dist, components: ['examples', 'serve'], tickNamespaces: ns });
}, 180_000);

afterAll(async () => {
  // The tick CronJob keeps running for the rest of the suite; without checks it has nothing to dispatch.
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

describe('kubectl apply -k infra/deploy, then the tick CronJob path end to end', () => {
  it('the tick Job dispatches one runner Job per due check, and each records its outcome', async () => {
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
    expect(done.status?.succeeded, JSON.stringify(done.status)).toBe(1);
    const tickPods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${tickJob}` });
    expect(tickPods.items[0]?.spec?.serviceAccountName).toBe('khrun-tick');

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
      timeoutMs: 120_000,
      description: 'outcomes of the three example checks',
    });

    for (const [name, kind] of Object.entries(EXAMPLES)) {
      const state = states.get(name)!;
      expect(readLastOutcome(state)?.kind, name).toBe(kind);
      const claim = readDispatchClaim(state);
      expect(claim?.ref, name).toMatch(new RegExp(`^khrun-run-${name}-[0-9a-z]+$`));
      // Exactly one runner Job for the check, and it is the one the claim names.
      const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `khrun.dev/check=${name}` });
      expect(jobs.items.map((j) => j.metadata?.name)).toEqual([claim?.ref]);
      const job = jobs.items[0]!;
      expect(job.spec).toMatchObject({ backoffLimit: 0, ttlSecondsAfterFinished: 3600 });
      const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${claim?.ref}` });
      const runnerPod = pods.items[0] as V1Pod;
      expect(runnerPod.spec?.serviceAccountName).toBe('khrun-runner');
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
    await waitFor<V1Job, true>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      labelSelector: 'app.kubernetes.io/component=run',
      decide: (items) => {
        const ours = [...items.values()].filter((j) =>
          Object.keys(EXAMPLES).includes(j.metadata?.labels?.['khrun.dev/check'] ?? ''),
        );
        return ours.length === 3 && ours.every((j) => j.status?.succeeded === 1) ? true : undefined;
      },
      timeoutMs: 60_000,
      description: 'the three runner Jobs to succeed',
    });
  }, 240_000);

  it('a second tick right after finds nothing due and dispatches nothing', async () => {
    const before = (
      await batch.listNamespacedJob({ namespace: ns, labelSelector: 'app.kubernetes.io/component=run' })
    ).items.length;
    const tickJob = uniqueName('tick-again');
    await kubectl(['create', 'job', `--from=cronjob/khrun-tick`, tickJob, '-n', ns]);
    await waitFor<V1Job, true>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      fieldSelector: `metadata.name=${tickJob}`,
      decide: (items) => (items.get(`${ns}/${tickJob}`)?.status?.succeeded ? true : undefined),
      timeoutMs: 60_000,
      description: `the tick Job ${tickJob} to succeed`,
    });
    const after = (
      await batch.listNamespacedJob({ namespace: ns, labelSelector: 'app.kubernetes.io/component=run' })
    ).items.length;
    expect(after).toBe(before);
  }, 120_000);

  it('the optional server Deployment serves health and the report endpoint on its pods', async () => {
    const pods = await waitFor<V1Pod, V1Pod[]>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: 'app.kubernetes.io/component=server',
      decide: (items) => {
        const running = [...items.values()].filter((p) => p.status?.phase === 'Running' && p.status.podIP);
        return running.length === 2 ? running : undefined;
      },
      timeoutMs: 60_000,
      description: 'two running khrun serve pods',
    });
    for (const pod of pods) {
      expect(pod.spec?.serviceAccountName).toBe('khrun-server');
      const base = `http://${pod.status?.podIP}:8080`;
      const health = await waitForHttp(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const report = await fetch(`${base}/externalCheckStatus`, {
        method: 'POST',
        body: '{"OK": true, "Errors": []}',
      });
      // The host is no checker pod: identified by neither header nor source IP, so rejected (400).
      expect(report.status).toBe(400);
    }
    const service = await core.readNamespacedService({ name: 'kuberhealthy', namespace: ns });
    expect(service.spec?.ports?.[0]).toMatchObject({ port: 80, targetPort: 'http' });
  }, 120_000);
});

/** The server starts listening a moment after its pod turns Running: retried until its deadline. */
async function waitForHttp(url: string, timeoutMs = 20_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1_000)) {
    try {
      return await fetch(url, { signal: AbortSignal.timeout(2_000) });
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}
