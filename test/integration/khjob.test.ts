import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildCheckerPod, CHECK_NAME_LABEL, RUN_ID_LABEL } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { silentLog } from '../../lib/core/log.ts';
import { JOB_RUNNER_ANNOTATION } from '../../lib/job/decide.ts';
import { asJobPod } from '../../lib/job/job-writes.ts';
import { jobAsCheck, KHJOB_PLURAL, type KhJob } from '../../lib/job/khjob.ts';
import { statusCodeOf } from '../../lib/kube/errors.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import type { CheckRef } from '../../lib/schedule/run-job.ts';
import { readActiveRun, readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION } from '../../lib/state/resources.ts';
import { WORKLOAD_LABEL } from '../../lib/state/workload.ts';
import type { V2Status } from '../../lib/status/status-json.ts';
import { runTick } from '../../lib/tick/tick.ts';
import { tickKube } from '../../lib/tick/tick-kube.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import {
  applyDeploy,
  DEPLOY_NAMESPACE,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './helpers/deploy.ts';
import {
  type KhrunResult,
  nodeContainer,
  npmClientEnv,
  outcomeOf,
  readState,
  repoRoot,
  runKhrun,
  startKhrun,
} from './helpers/khrun.ts';

// Kuberhealthy v2's khjobs on the real API server: a khjob is run once, found by the tick's dispatch, run by
// `khrun run --job` as khrun's runner ServiceAccount (its RBAC and admission policies in force), its phase
// and result recorded as v2.7.1 records them, and listed under the status JSON's JobDetails.

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
let ns: string;
let runnerKubeconfig: string;
let tickKc: KubeConfig;
let runnerKc: KubeConfig;

beforeAll(async () => {
  await applyDeploy({ name: 'khjob' });
  ns = await freshNamespace(kc, 'khjob');
  runnerKc = await serviceAccountKubeConfig(kc, DEPLOY_NAMESPACE, 'khrun-runner');
  runnerKubeconfig = await writeKubeConfig(runnerKc, 'khjob-runner');
  tickKc = await serviceAccountKubeConfig(kc, DEPLOY_NAMESPACE, 'khrun-tick');
}, 180_000);
afterAll(async () => {
  await dropNamespace(kc, ns);
});

/** A khjob as v2's docs write one: no runInterval, a timeout, the pod spec. */
async function createJob(name: string, podSpec: V1PodSpec, timeout = '60s'): Promise<KhJob> {
  const body = {
    apiVersion: `${KH_GROUP}/${KH_VERSION}`,
    kind: 'KuberhealthyJob',
    metadata: { name, namespace: ns },
    spec: { timeout, podSpec },
  };
  return (await custom.createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHJOB_PLURAL,
    namespace: ns,
    body,
  })) as KhJob;
}

async function readJob(name: string): Promise<KhJob> {
  return (await custom.getNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHJOB_PLURAL,
    namespace: ns,
    name,
  })) as KhJob;
}

async function jobPods(name: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: ns, labelSelector: `${CHECK_NAME_LABEL}=${name}` }))
    .items;
}

/** `khrun run` as the runner ServiceAccount: the env a dispatched runner Job gets, or --job. */
function runAsRunner(args: string[], env: Record<string, string> = {}): Promise<KhrunResult> {
  return runKhrun(['--namespace', ns, '--output', 'json', ...args], { KUBECONFIG: runnerKubeconfig, ...env });
}

/** `khrun status -o json`: v2's status JSON, as the status page serves it. */
async function statusJson(): Promise<V2Status> {
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'functions/khrun.mjs'), 'status', '-n', ns, '-o', 'json'],
    {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath') },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c;
  });
  await new Promise((resolve) => child.once('close', resolve));
  return JSON.parse(stdout) as V2Status;
}

const reportsOk = nodeContainer("require('kuberhealthy').ReportSuccess().then(() => console.log('sent'))", {
  env: npmClientEnv,
});

describe('khjobs (comcast.github.io/v1 KuberhealthyJob), run once', () => {
  it('the tick dispatches a new khjob once; its runner runs it once; phase, khstate and JobDetails as v2', async () => {
    const job = await createJob('tick-job', { containers: [reportsOk] });
    const sent: { check: CheckRef; ref: string }[] = [];
    const dispatcher: Dispatcher = {
      runsKhJobs: true,
      refFor: (check, nowMs) => `khrun-job-${check.name}-${nowMs}`,
      dispatch: async (check, ref) => {
        sent.push({ check, ref });
      },
    };
    const tickClient = kubeClient(tickKc);
    const tick = (identity: string) =>
      runTick(
        { kube: tickKube(tickClient), dispatcher, clock: tickClient.clock, log: silentLog },
        { scope: { namespaces: [ns] }, identity },
      );
    // Two ticks at once, as the tick's ServiceAccount: the dispatch claim lets one of them send it.
    const [a, b] = await Promise.all([tick('tick-a'), tick('tick-b')]);
    const entries = [...a, ...b].filter((e) => e.check === `khjob/${ns}/tick-job`);
    // The other loses the write race ('lost') or, listing after the claim landed, finds it claimed ('not-due').
    expect([
      ['dispatched', 'lost'],
      ['dispatched', 'not-due'],
    ]).toContainEqual(entries.map((e) => e.result).sort());
    expect(sent).toHaveLength(1);
    expect(sent[0]?.check).toMatchObject({ namespace: ns, name: 'tick-job', kind: 'khjob' });

    // What the dispatched runner Job runs: `khrun run` with KHJOB_NAME and CHECK_NAMESPACE (run-job.ts).
    const ran = await runAsRunner([], { KHJOB_NAME: 'tick-job', CHECK_NAMESPACE: ns });
    expect(ran.code, ran.stderr).toBe(0);
    expect(outcomeOf(ran)).toMatchObject({ result: 'recorded', kind: 'Succeeded', ok: true, errors: [] });

    const after = await readJob('tick-job');
    expect(after.spec.phase).toBe('Completed');
    expect(after.metadata.annotations?.[JOB_RUNNER_ANNOTATION]).toBeTruthy();
    const state = await readState(kc, ns, 'tick-job');
    expect(state?.metadata.labels?.[WORKLOAD_LABEL]).toBe('KHJob');
    expect(state?.spec).toMatchObject({ OK: true, Errors: [], Namespace: ns, uuid: job.metadata.uid });
    expect(state?.spec.AuthoritativePod).not.toBe('');
    expect(state?.spec.LastRun).toBeTruthy();
    expect(readLastOutcome(state)?.uuid).toBe(job.metadata.uid);
    const pods = await jobPods('tick-job');
    expect(pods).toHaveLength(1);
    expect(pods[0]?.metadata?.labels?.[RUN_ID_LABEL]).toBe(job.metadata.uid);
    expect(pods[0]?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'KuberhealthyJob',
      name: 'tick-job',
      uid: job.metadata.uid,
    });

    // Never again: the next tick does not list it, and a run by hand finds it ran.
    const later = await tick('tick-c');
    expect(later.filter((e) => e.check === `khjob/${ns}/tick-job`)).toEqual([]);
    expect(sent).toHaveLength(1);
    const again = await runAsRunner(['--job', 'tick-job']);
    expect(again.code, again.stderr).toBe(0);
    expect(outcomeOf(again)).toMatchObject({ result: 'already-ran' });
    expect(await jobPods('tick-job')).toHaveLength(1);

    const status = await statusJson();
    expect(status.JobDetails[`${ns}/tick-job`]).toMatchObject({
      OK: true,
      Errors: [],
      uuid: job.metadata.uid,
    });
    expect(status.CheckDetails[`${ns}/tick-job`]).toBeUndefined();
  });

  it('khrun run --job twice at once runs it once, and records a reported failure as v2 does', async () => {
    await createJob('fails', {
      containers: [
        nodeContainer("require('kuberhealthy').ReportFailure(['disk full on /data'])", { env: npmClientEnv }),
      ],
    });
    const [a, b] = await Promise.all([runAsRunner(['--job', 'fails']), runAsRunner(['--job', 'fails'])]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const results = [outcomeOf(a).result, outcomeOf(b).result];
    expect(results.filter((r) => r === 'recorded')).toHaveLength(1);
    expect(results.filter((r) => r !== 'recorded')[0]).toMatch(/^(busy|already-ran)$/);
    expect(await jobPods('fails')).toHaveLength(1);
    expect((await readJob('fails')).spec.phase).toBe('Completed');
    const state = await readState(kc, ns, 'fails');
    expect(state?.spec).toMatchObject({ OK: false, Errors: ['disk full on /data'] });
    const status = await statusJson();
    expect(status.JobDetails[`${ns}/fails`]).toMatchObject({ OK: false, Errors: ['disk full on /data'] });
    expect(status.OK).toBe(false);
    expect(status.Errors).toContain('disk full on /data');
  });

  it("a run that timed out is recorded in v2's khjob wording, and the khjob is Completed", async () => {
    await createJob('silent', { containers: [nodeContainer('setInterval(() => {}, 1000)')] }, '4s');
    const ran = await runAsRunner(['--job', 'silent']);
    expect(outcomeOf(ran)).toMatchObject({ result: 'recorded', kind: 'TimedOut', ok: false });
    const state = await readState(kc, ns, 'silent');
    expect(state?.spec.Errors[0]).toMatch(
      new RegExp(`^Job execution error: ${ns}/silent: timed out waiting for checker pod to report in`),
    );
    expect((await readJob('silent')).spec.phase).toBe('Completed');
  });

  it('a run whose runner was SIGKILLed is adopted by the next invocation and recorded once', async () => {
    const job = await createJob('killed', {
      containers: [
        nodeContainer("setTimeout(() => require('kuberhealthy').ReportSuccess(), 3000)", {
          env: npmClientEnv,
        }),
      ],
    });
    const lease = { KHRUN_LEASE_SECONDS: '2' };
    const first = startKhrun(['--job', 'killed', '--namespace', ns, '--output', 'json'], {
      KUBECONFIG: runnerKubeconfig,
      ...lease,
    });
    await waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: `${CHECK_NAME_LABEL}=killed`,
      decide: (items) => ([...items.values()].some((p) => p.status?.phase === 'Running') ? true : undefined),
      timeoutMs: 60_000,
      description: 'the khjob pod to run',
    });
    first.child.kill('SIGKILL');
    await first.done;
    expect(readActiveRun(await readState(kc, ns, 'killed'))?.uuid).toBe(job.metadata.uid);
    expect((await readJob('killed')).spec.phase).toBe('Running');

    // The lease (2 s) has to run out before the run can be adopted; until then an invocation finds it busy.
    const deadline = Date.now() + 30_000;
    let outcome = outcomeOf(await runAsRunner(['--job', 'killed'], lease));
    while (outcome.result === 'busy' && Date.now() < deadline)
      outcome = outcomeOf(await runAsRunner(['--job', 'killed'], lease));
    expect(outcome).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
    expect(await jobPods('killed')).toHaveLength(1);
    expect((await readJob('killed')).spec.phase).toBe('Completed');
    expect(readLastOutcome(await readState(kc, ns, 'killed'))?.uuid).toBe(job.metadata.uid);
  });

  it("the admission policies hold for a khjob's checker pod: its own podSpec, owned by its KuberhealthyJob", async () => {
    const job = await createJob('vap-job', { containers: [reportsOk] });
    const valid = validateCheck(jobAsCheck(job));
    if (!valid.ok) throw new Error(valid.reason);
    const pod = (image?: string) => {
      const built = asJobPod(
        buildCheckerPod({
          check: valid.check,
          runUuid: job.metadata.uid ?? '',
          reportingUrl: 'http://127.0.0.1:1/externalCheckStatus',
          deadlineEpochMs: Date.now() + 60_000,
          nowEpochMs: Date.now(),
        }),
        job,
      );
      if (image) built.spec!.containers[0]!.image = image;
      return built;
    };
    /** The runner's request (server-side dry run): 'allowed', or the status and body of its refusal. */
    const attempt = async (body: V1Pod) => {
      try {
        await runnerKc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: ns, body, dryRun: 'All' });
        return 'allowed';
      } catch (error) {
        const body = (error as { body?: unknown }).body;
        return `${statusCodeOf(error)} ${typeof body === 'string' ? body : JSON.stringify(body)}`;
      }
    };
    // A policy takes effect once the API server's informers hold it and its parameters (the khjobs).
    const deadline = Date.now() + 60_000;
    let otherImage = await attempt(pod('evil'));
    while (otherImage === 'allowed' && Date.now() < deadline) {
      await new Promise<void>((resolve) => setTimeout(resolve, 250).unref());
      otherImage = await attempt(pod('evil'));
    }
    expect(otherImage).toMatch(/^403 .*khrun-runner-khjob-pod-spec.*runs its podSpec as written/s);
    expect(await attempt(pod())).toBe('allowed');
    const ownedByACheck = pod();
    ownedByACheck.metadata!.ownerReferences![0]!.kind = 'KuberhealthyCheck';
    // Two policies refuse it (the owner kind, and policy 2b's owner uid); which one the API server names
    // depends on its evaluation order (one full run named each), so either is the refusal.
    expect(await attempt(ownedByACheck)).toMatch(
      /^403 .*(khrun-runner-checker-pods|khrun-runner-khjob-pod-spec)/s,
    );
  });
});
