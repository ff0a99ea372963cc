import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { createCheck, nodeContainer } from './helpers/khrun.ts';

// Two `khrun tick` processes at once, as the tick's ServiceAccount, over the same due checks: the
// dispatch claim (a compare-and-swap on each khstate) lets exactly one of them send each check.

const kc = adminKubeConfig();
let ns: string;
let dist: string;
let tickKubeconfig: string;
const CHECKS = ['alpha', 'bravo', 'charlie', 'delta'];

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

function tick(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      join(dist, 'khrun.mjs'),
      'tick',
      '--namespaces',
      ns,
      '--job-namespace',
      DEPLOY_NAMESPACE,
      '--first-run-jitter',
      '0s',
      '-o',
      'json',
    ],
    {
      env: { ...process.env, KUBECONFIG: tickKubeconfig, POWERTOOLS_LOG_LEVEL: 'WARN' },
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
  it('dispatches each due check exactly once, and the dispatched Jobs run them', async () => {
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
