import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CHECK_LABEL } from '../../../lib/schedule/run-job.ts';
import { readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from '../helpers/cluster.ts';
import { createCheck, readState, repoRoot } from '../helpers/khrun.ts';
import { checkerContainer, type Gate, startGate } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import {
  checkPods,
  readHistory,
  recordedOutcomes,
  stateProblems,
  waitForState,
} from './helpers/invariants.ts';
import { type Runner, resultOf, startRunner, stopRunner } from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Overlap: invocations of one check that meet in time must make one run. The checkers wait at a gate
// that opens only once the other invocations have decided, so the overlap is certain, not a matter of
// timing.

const kc = adminKubeConfig();
let ns: string;
let gate: Gate;
let tally: ReportTally;
const started: Runner[] = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-overlap');
  gate = await startGate(inject('hostIp'));
  tally = await startReportTally(kc, inject('hostIp'));
});
afterAll(async () => {
  for (const r of started) await stopRunner(r);
  await gate?.close();
  await tally?.close();
  await dropNamespace(kc, ns);
});

/** Resolves when n of the promises have settled, or after timeoutMs (the assertions then say what is wrong). */
function whenSettled(promises: Promise<unknown>[], n: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let count = 0;
    const timer = setTimeout(resolve, timeoutMs);
    for (const p of promises) {
      void p.finally(() => {
        if (++count === n) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
}

describe('overlapping invocations of one check', () => {
  it('10 `khrun run` at once: one pod, one recorded outcome; the other nine exit 0 as skipped', async () => {
    const fault = 'overlap: 10 `khrun run` of one check at once';
    const row = faultScenario(fault);
    const check = 'ten-at-once';
    await createCheck(kc, ns, check, {
      containers: [checkerContainer({ gateUrl: gate.waitUrl(check), notifyUrl: tally.url(check) })],
    });
    const runners = Array.from({ length: 10 }, (_, i) => startRunner(check, ns, { POD_NAME: `runner-${i}` }));
    started.push(...runners);
    await whenSettled(
      runners.map((r) => r.done),
      9,
      90_000,
    );
    gate.open(check);
    const exits = await Promise.all(runners.map((r) => r.done));
    const results = exits.map(resultOf);
    const recorded = results.filter((r) => r?.result === 'recorded');
    const busy = results.filter((r) => r?.result === 'busy');
    const pods = await checkPods(kc, ns, check);
    const state = await readState(kc, ns, check);
    const reported = tally.runs(check);
    await row.record({
      fault,
      runs: exits.length,
      outcome: `${pods.length} pod, ${recordedOutcomes(state)} recorded outcome (${readLastOutcome(state)?.kind}); ${busy.length} exited as skipped (exit codes ${[...new Set(exits.map((e) => e.code))].join(', ')})`,
      reported: reported.length,
      recorded: recordedOf(reported, [readLastOutcome(state)?.uuid]),
    });

    expect(
      exits.map((e) => e.code),
      exits.map((e) => e.stderr).join('\n'),
    ).toEqual(Array(10).fill(0));
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ kind: 'Succeeded', adopted: false });
    expect(busy).toHaveLength(9);
    expect(pods).toHaveLength(1);
    expect(stateProblems(state, ns)).toEqual([]);
    expect(recordedOutcomes(state)).toBe(1);
    expect(readHistory(state)).toHaveLength(1);
  });

  it('two `khrun tick` at once, then a manual rerun as the dispatched Job starts: each check dispatched once, one run', {
    timeout: 300_000,
  }, async () => {
    const fault = 'overlap: 2 `khrun tick` at once + a manual `khrun run` as each dispatched Job starts';
    const row = faultScenario(fault);
    const checks = ['tick-a', 'tick-b', 'tick-c'];
    for (const check of checks) {
      await createCheck(kc, ns, check, {
        containers: [checkerContainer({ gateUrl: gate.waitUrl(check), notifyUrl: tally.url(check) })],
      });
    }
    await createRunnerTemplate();

    // The two ticks: the tick's own CLI, in Job mode, dispatching from this namespace's runner template.
    const [a, b] = await Promise.all([tick(), tick()]);
    type Entry = { check: string; result: string; ref?: string };
    // A tick that printed no result (it failed) dispatched nothing: its exit code is asserted below.
    const entries = [a, b].flatMap((r) => {
      const last = r.stdout.trim().split('\n').pop() ?? '';
      return last.startsWith('{') ? ((JSON.parse(last) as { entries?: Entry[] }).entries ?? []) : [];
    });
    const dispatched = entries.filter((e) => e.result === 'dispatched').map((e) => e.check);

    // The manual rerun of every check, at the moment its dispatched Job starts its runner pod.
    const manual = new Map(checks.map((c) => [c, startRunner(c, ns, { POD_NAME: `manual-${c}` })]));
    started.push(...manual.values());
    await Promise.all(
      checks.map(async (check) => {
        const holder = await waitForState(
          kc,
          ns,
          check,
          (s) => readActiveRun(s)?.runner,
          'a claimed run',
          120_000,
        );
        // The one that did not claim must have decided (skipped) before the check is let report.
        if (holder.startsWith('manual-')) await jobFinished(check);
        else await manual.get(check)?.done;
        gate.open(check);
      }),
    );
    const manualExits = await Promise.all([...manual.values()].map((r) => r.done));
    const jobs = await Promise.all(checks.map(jobFinished));
    const measured = await Promise.all(
      checks.map(async (check) => ({
        check,
        pods: await checkPods(kc, ns, check),
        state: await readState(kc, ns, check),
      })),
    );
    const reported = checks.flatMap((check) => tally.runs(check));
    const manualWins = measured.filter((m) => m.state?.spec.AuthoritativePod.startsWith('manual-')).length;
    await row.record({
      fault,
      runs: checks.length,
      outcome: `each check dispatched once (${dispatched.length} Jobs); ${measured.map((m) => m.pods.length).join('/')} pods and ${measured.map((m) => recordedOutcomes(m.state)).join('/')} outcomes per check (won by the manual run ${manualWins}, the Job ${checks.length - manualWins}); the other exited as skipped`,
      reported: reported.length,
      recorded: recordedOf(
        reported,
        measured.map((m) => readLastOutcome(m.state)?.uuid),
      ),
    });

    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(dispatched.sort()).toEqual(checks.map((c) => `${ns}/${c}`));
    expect(
      manualExits.map((e) => e.code),
      manualExits.map((e) => e.stderr).join('\n'),
    ).toEqual([0, 0, 0]);
    expect(
      jobs.map((j) => j.status?.succeeded),
      (await Promise.all(checks.map(jobLogs))).join('\n'),
    ).toEqual([1, 1, 1]);
    for (const { check, pods, state } of measured) {
      expect(pods, check).toHaveLength(1);
      expect(stateProblems(state, ns), check).toEqual([]);
      expect(recordedOutcomes(state), check).toBe(1);
      expect(readLastOutcome(state)?.kind, check).toBe('Succeeded');
    }
  });
});

/**
 * A runner PodTemplate in the test namespace, as infra/deploy's khrun-runner but running this checkout's
 * CLI with the admin kubeconfig (pointed at the pod network's API address): RBAC is the deploy suite's.
 */
async function createRunnerTemplate(): Promise<void> {
  const podKc = new KubeConfig();
  podKc.loadFromFile(inject('kubeconfigPath'));
  const cluster = podKc.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no cluster');
  const podConfig = new KubeConfig();
  podConfig.loadFromOptions({
    clusters: [{ ...cluster, server: `https://${inject('hostIp')}:${inject('apiServerPort')}` }],
    users: podKc.users,
    contexts: podKc.contexts,
    currentContext: podKc.currentContext,
  });
  const dir = join(repoRoot, '.khrun/test-kubeconfigs');
  await mkdir(dir, { recursive: true });
  const path = join(dir, `faults-overlap-${ns}`);
  await writeFile(path, podConfig.exportConfig(), { mode: 0o600 });
  await kc.makeApiClient(CoreV1Api).createNamespacedPodTemplate({
    namespace: ns,
    body: {
      metadata: { name: 'fault-runner' },
      template: {
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'runner',
              image: 'khrun',
              command: [process.execPath, join(repoRoot, 'functions/khrun.mjs'), 'run', '--output', 'json'],
              env: [
                { name: 'KUBECONFIG', value: path },
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              ],
            },
          ],
        },
      },
    },
  });
}

function tick(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'functions/khrun.mjs'),
      'tick',
      '--namespaces',
      ns,
      '--job-namespace',
      ns,
      '--pod-template',
      'fault-runner',
      '--first-run-jitter',
      '0s',
      // One Job per check: this scenario races each check's own Job with a manual run of that check (the
      // test waits for a check's Job to end before letting the check report). Two ticks sending batches at
      // once are tick.test.ts's.
      '--batch-size',
      '1',
      '-o',
      'json',
    ],
    {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), POWERTOOLS_LOG_LEVEL: 'WARN' },
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

/** The runner log of the check's Job pods, for failure messages. */
async function jobLogs(check: string): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `${CHECK_LABEL}=${check}` });
  const logs = await Promise.all(
    pods.items.map((p) =>
      core
        .readNamespacedPodLog({ namespace: ns, name: p.metadata?.name ?? '' })
        .catch((e: unknown) => `(no log: ${String(e)})`),
    ),
  );
  return `${check}: ${pods.items.map((p) => `${p.metadata?.name} ${JSON.stringify(p.status?.containerStatuses?.[0]?.state)}`).join(', ')}\n${logs.join('\n')}`;
}

/** Waits, by watch, until the Job dispatched for the check has finished (succeeded or failed). */
async function jobFinished(check: string): Promise<V1Job> {
  return waitFor<V1Job, V1Job>(kc, {
    path: `/apis/batch/v1/namespaces/${ns}/jobs`,
    labelSelector: `${CHECK_LABEL}=${check}`,
    decide: (items) => [...items.values()].find((j) => j.status?.succeeded || j.status?.failed),
    timeoutMs: 120_000,
    description: `the dispatched Job of ${check} to finish`,
  }).catch(async (error: unknown) => {
    throw new Error(`${String(error)}\n${await jobLogs(check)}`);
  });
}
