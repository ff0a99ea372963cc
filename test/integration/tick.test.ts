import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_ENV, runnerJobChecks } from '../../lib/schedule/batch-job.ts';
import { readDispatchClaim } from '../../lib/state/dispatch-claim.ts';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import {
  applyDeploy,
  buildTestBundles,
  DEPLOY_NAMESPACE,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './helpers/deploy.ts';
import { createCheck, goCheckerBinary, nodeContainer } from './helpers/khrun.ts';

// Two `khrun tick` processes at once, as the tick's ServiceAccount, over the same due checks: the
// dispatch claim (a compare-and-swap on each khstate) lets exactly one of them send each check, one Job per
// check or in batch Jobs of up to KHRUN_BATCH_SIZE checks, which the runner (lib/batch) runs to outcomes.

const kc = adminKubeConfig();
let ns: string;
let dist: string;
let tickKubeconfig: string;
const CHECKS = ['alpha', 'bravo', 'charlie', 'delta'];
/** The namespaces of the batch cases' checks (dropped after the file). */
const batchNamespaces: string[] = [];

beforeAll(async () => {
  dist = await buildTestBundles();
  await applyDeploy({ name: 'tick', distDir: dist, tickNamespaces: DEPLOY_NAMESPACE });
  ns = await freshNamespace(kc, 'tick');
  tickKubeconfig = await writeKubeConfig(
    await serviceAccountKubeConfig(kc, DEPLOY_NAMESPACE, 'khrun-tick'),
    'tick',
  );
  for (const name of CHECKS) {
    // Reports with the kh-run-uuid header (as v2.5+'s Go client): identified without waiting on pod IPs.
    await createCheck(kc, ns, name, {
      containers: [
        nodeContainer(
          "fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) }).then(async (r) => console.log(r.status, await r.text()));",
        ),
      ],
    });
  }
}, 180_000);
afterAll(async () => {
  await dropNamespace(kc, ns);
  for (const b of batchNamespaces) await dropNamespace(kc, b);
});

/** What the runner Jobs' pods did, for a failure message. */
async function describeRuns(jobs: V1Job[]): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const lines: string[] = [];
  for (const job of jobs) {
    const pods = await core.listNamespacedPod({
      namespace: DEPLOY_NAMESPACE,
      labelSelector: `job-name=${job.metadata?.name}`,
    });
    for (const pod of pods.items) {
      const log = await core
        .readNamespacedPodLog({ name: pod.metadata?.name ?? '', namespace: DEPLOY_NAMESPACE })
        .catch((e: unknown) => String(e));
      lines.push(
        `${pod.metadata?.name} ${pod.status?.phase} ${JSON.stringify(pod.status?.containerStatuses?.[0]?.state)}\n${String(log).slice(-1500)}`,
      );
    }
  }
  for (const pod of (await core.listNamespacedPod({ namespace: ns })).items) {
    const log = await core
      .readNamespacedPodLog({ name: pod.metadata?.name ?? '', namespace: ns })
      .catch((e: unknown) => String(e));
    lines.push(
      `checker ${pod.metadata?.name} ${pod.status?.podIP} ${pod.status?.phase}: ${String(log).slice(-600)}`,
    );
  }
  return lines.join('\n');
}

/** `khrun tick` over one namespace (default ns), as the tick's ServiceAccount, with KHRUN_BATCH_SIZE. */
function tick(
  opts: { namespace?: string; batchSize?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      join(dist, 'khrun.mjs'),
      'tick',
      '--namespaces',
      opts.namespace ?? ns,
      '--job-namespace',
      DEPLOY_NAMESPACE,
      '--first-run-jitter',
      '0s',
      '-o',
      'json',
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: tickKubeconfig,
        POWERTOOLS_LOG_LEVEL: 'WARN',
        KHRUN_BATCH_SIZE: String(opts.batchSize ?? 1),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c;
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('khrun tick, two at once, on the real API server', () => {
  it('one Job per check (KHRUN_BATCH_SIZE=1): dispatches each due check exactly once, and the dispatched Jobs run them', async () => {
    const [a, b] = await Promise.all([tick(), tick()]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    type Entry = { check: string; result: string; ref?: string };
    const entries = [a, b].flatMap(
      (r) => (JSON.parse(r.stdout.trim().split('\n').pop()!) as { entries: Entry[] }).entries,
    );
    const dispatched = entries.filter((e) => e.result === 'dispatched');
    expect(dispatched.map((e) => e.check).sort()).toEqual(CHECKS.map((c) => `${ns}/${c}`));
    expect(entries.filter((e) => e.result === 'lost' || e.result === 'not-due')).toHaveLength(CHECKS.length);

    const jobs = (
      await kc
        .makeApiClient(BatchV1Api)
        .listNamespacedJob({ namespace: DEPLOY_NAMESPACE, labelSelector: 'app.kubernetes.io/component=run' })
    ).items.filter((j) => j.metadata?.annotations?.['khrun.dev/check-namespace'] === ns);
    expect(jobs.map((j) => j.metadata?.annotations?.['khrun.dev/check-name']).sort()).toEqual(CHECKS);
    expect(jobs.map((j) => j.metadata?.name).sort()).toEqual(dispatched.map((e) => e.ref).sort());

    const states = await waitFor<KhState, KhState[]>(kc, {
      path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/${KHSTATE_PLURAL}`,
      decide: (items) => {
        const done = [...items.values()].filter((s) => readLastOutcome(s)?.kind === 'Succeeded');
        return done.length === CHECKS.length ? done : undefined;
      },
      timeoutMs: 90_000,
      description: 'a Succeeded outcome for every dispatched check',
    }).catch(async (error: unknown) => {
      throw new Error(`${(error as Error).message}\n${await describeRuns(jobs)}`);
    });
    for (const state of states) {
      const claim = readDispatchClaim(state);
      expect(
        jobs.find((j: V1Job) => j.metadata?.name === claim?.ref),
        state.metadata.name,
      ).toBeDefined();
      expect(readLastOutcome(state)!.startedAtMs).toBeGreaterThanOrEqual(claim!.atMs);
    }
    // Nothing is due any more: a third tick sends nothing.
    const c = await tick();
    expect(c.code, c.stderr).toBe(0);
    const third = (JSON.parse(c.stdout.trim().split('\n').pop()!) as { entries: Entry[] }).entries;
    expect(third.filter((e) => e.result === 'dispatched')).toEqual([]);
  }, 180_000);
});

type Entry = { check: string; result: string; ref?: string };
const entriesOf = (r: { stdout: string }) =>
  (JSON.parse(r.stdout.trim().split('\n').pop()!) as { entries: Entry[] }).entries;

/** n khchecks that report success at once (Kuberhealthy's Go checkclient), in a fresh namespace. */
async function dueChecks(n: number): Promise<{ namespace: string; names: string[] }> {
  const namespace = await freshNamespace(kc, 'tick-batch');
  batchNamespaces.push(namespace);
  const checker = await goCheckerBinary();
  const names = Array.from({ length: n }, (_, i) => `c${String(i).padStart(2, '0')}`);
  for (let i = 0; i < n; i += 20)
    await Promise.all(
      names.slice(i, i + 20).map((name) =>
        createCheck(kc, namespace, name, {
          containers: [{ name: 'check', image: 'go-checker', command: [checker] }],
        }),
      ),
    );
  return { namespace, names };
}

/** The runner Jobs whose checks are in namespace (a batch's annotation, or a single run's). */
async function jobsOf(namespace: string): Promise<V1Job[]> {
  const jobs = await kc
    .makeApiClient(BatchV1Api)
    .listNamespacedJob({ namespace: DEPLOY_NAMESPACE, labelSelector: 'app.kubernetes.io/component=run' });
  return jobs.items.filter((j) => runnerJobChecks(j.metadata).some((c) => c.namespace === namespace));
}

/** Every check of namespace recorded Succeeded, each claim naming the Job whose KHRUN_BATCH lists it. */
async function expectRunByTheirBatches(namespace: string, names: string[], jobs: V1Job[]) {
  const listed = new Map<string, string>();
  for (const job of jobs) {
    const env = job.spec?.template.spec?.containers[0]?.env ?? [];
    const batch = JSON.parse(env.find((e) => e.name === BATCH_ENV)?.value ?? '[]') as Array<{
      namespace: string;
      name: string;
    }>;
    expect(batch, job.metadata?.name).toEqual(runnerJobChecks(job.metadata));
    expect(env.map((e) => e.name)).not.toContain('CHECK_NAME');
    for (const c of batch) {
      expect(listed.has(c.name), `${c.name} in two Jobs`).toBe(false);
      listed.set(c.name, job.metadata?.name ?? '');
    }
  }
  expect([...listed.keys()].sort()).toEqual(names);
  const states = await waitFor<KhState, KhState[]>(kc, {
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`,
    decide: (items) => {
      const done = [...items.values()].filter((s) => readLastOutcome(s)?.kind === 'Succeeded');
      return done.length === names.length ? done : undefined;
    },
    timeoutMs: 150_000,
    description: `a Succeeded outcome for each of the ${names.length} checks of ${namespace}`,
  }).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}\n${await describeRuns(jobs)}`);
  });
  for (const state of states)
    expect(readDispatchClaim(state)?.ref, state.metadata.name).toBe(listed.get(state.metadata.name));
}

describe('khrun tick in batches (KHRUN_BATCH_SIZE=25), on the real API server', () => {
  it('60 due checks: 3 batch Jobs of 25, 25 and 10, each check claimed once by its Job, every outcome recorded', async () => {
    const { namespace, names } = await dueChecks(60);
    const r = await tick({ namespace, batchSize: 25 });
    expect(r.code, r.stderr).toBe(0);
    const entries = entriesOf(r);
    expect(entries.filter((e) => e.result === 'dispatched').map((e) => e.check)).toEqual(
      names.map((n) => `${namespace}/${n}`),
    );
    const jobs = await jobsOf(namespace);
    expect(jobs.map((j) => runnerJobChecks(j.metadata).length).sort((a, b) => b - a)).toEqual([25, 25, 10]);
    for (const job of jobs) {
      expect(job.metadata?.name).toMatch(/^khrun-batch-[0-9a-z]+-[0-9a-f]{6}-[0-9]+$/);
      expect(job.metadata?.labels).toMatchObject({
        'khrun.dev/batch': 'true',
        'app.kubernetes.io/component': 'run',
      });
      expect(job.metadata?.labels?.['khrun.dev/check']).toBeUndefined();
    }
    await expectRunByTheirBatches(namespace, names, jobs);
    // Nothing is due any more.
    const again = await tick({ namespace, batchSize: 25 });
    expect(entriesOf(again).filter((e) => e.result === 'dispatched')).toEqual([]);
  }, 240_000);

  it('two ticks at once over 60 due checks: each check dispatched once, in Jobs of at most 25', async () => {
    const { namespace, names } = await dueChecks(60);
    const [a, b] = await Promise.all([
      tick({ namespace, batchSize: 25 }),
      tick({ namespace, batchSize: 25 }),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const entries = [...entriesOf(a), ...entriesOf(b)];
    const dispatched = entries.filter((e) => e.result === 'dispatched');
    expect(dispatched.map((e) => e.check).sort()).toEqual(names.map((n) => `${namespace}/${n}`));
    expect(entries.filter((e) => e.result === 'lost' || e.result === 'not-due')).toHaveLength(60);
    const jobs = await jobsOf(namespace);
    expect(jobs.map((j) => j.metadata?.name).sort()).toEqual(
      [...new Set(dispatched.map((e) => e.ref))].sort(),
    );
    for (const job of jobs) expect(runnerJobChecks(job.metadata).length).toBeLessThanOrEqual(25);
    await expectRunByTheirBatches(namespace, names, jobs);
  }, 240_000);
});
