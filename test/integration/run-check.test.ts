import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_NAME_LABEL, RUN_ID_LABEL } from '../../lib/check/pod-builder.ts';
import { ANNOTATION, readActiveRun, readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import {
  createCheck,
  goCheckerBinary,
  type KhrunResult,
  nodeContainer,
  npmClientEnv,
  outcomeOf,
  readState,
  runKhrun,
  startKhrun,
} from './helpers/khrun.ts';

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
let ns: string;

beforeAll(async () => {
  ns = await freshNamespace(kc, 'run');
});
afterAll(async () => {
  await dropNamespace(kc, ns);
});

const args = (check: string) => ['--check', check, '--namespace', ns, '--output', 'json'];
const GO_DURATION = /^(\d+(\.\d+)?(ns|µs|ms|s|m|h))+$/;

async function checkPods(check: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: ns, labelSelector: `${CHECK_NAME_LABEL}=${check}` }))
    .items;
}

/** Waits until the check's current run has a pod in the given phase, and returns it. */
function waitForRunPod(check: string, phase: string, timeoutMs = 60_000): Promise<V1Pod> {
  return waitFor<V1Pod, V1Pod>(kc, {
    path: `/api/v1/namespaces/${ns}/pods`,
    labelSelector: `${CHECK_NAME_LABEL}=${check}`,
    decide: (items) =>
      [...items.values()].find((p) => p.status?.phase === phase && !p.metadata?.deletionTimestamp),
    timeoutMs,
    description: `a ${phase} pod of check ${check}`,
  });
}

describe('khrun run, one iteration on the local cluster', () => {
  it('records success reported through the npm kuberhealthy client (no header: identified by source IP)', async () => {
    await createCheck(kc, ns, 'npm-ok', {
      containers: [
        nodeContainer(
          "const kh = require('kuberhealthy'); kh.ReportSuccess().then(() => console.log('sent'), (e) => { console.error(e.message); process.exit(1); });",
          { env: npmClientEnv },
        ),
      ],
    });
    const started = Date.now();
    const result = await runKhrun(args('npm-ok'));
    expect(result.code, result.stderr).toBe(0);
    const outcome = outcomeOf(result);
    expect(outcome).toMatchObject({ result: 'recorded', kind: 'Succeeded', ok: true, errors: [] });
    const state = await readState(kc, ns, 'npm-ok');
    expect(state?.spec).toMatchObject({ OK: true, Errors: [], Namespace: ns, Node: 'khrun-node' });
    expect(state?.spec.RunDuration).toMatch(GO_DURATION);
    expect(state?.spec.AuthoritativePod).not.toBe('');
    expect(new Date(state?.spec.LastRun ?? 0).getTime()).toBeGreaterThanOrEqual(
      Math.floor(started / 1000) * 1000,
    );
    expect(readActiveRun(state)).toBeUndefined();
    expect(readLastOutcome(state)?.kind).toBe('Succeeded');
    const pods = await checkPods('npm-ok');
    expect(pods).toHaveLength(1);
    expect(pods[0]?.metadata?.labels?.[RUN_ID_LABEL]).toBe(state?.spec.uuid);
  });

  it("records success from a check built on Kuberhealthy v2.7.1's Go checkclient (kh-run-uuid header)", async () => {
    const binary = await goCheckerBinary();
    await createCheck(kc, ns, 'go-ok', {
      containers: [{ name: 'check', image: 'example/go-check:1', command: [binary] }],
    });
    const result = await runKhrun(args('go-ok'));
    expectOutcome(result, { result: 'recorded', kind: 'Succeeded', ok: true });
    expect((await readState(kc, ns, 'go-ok'))?.spec.OK).toBe(true);
  });

  it('records a reported failure with its errors, and exits 0 (a failed check is data)', async () => {
    await createCheck(kc, ns, 'reports-failure', {
      containers: [
        nodeContainer("require('kuberhealthy').ReportFailure(['disk full on /data', 'second error']);", {
          env: npmClientEnv,
        }),
      ],
    });
    const result = await runKhrun(args('reports-failure'));
    expect(result.code).toBe(0);
    const state = await readState(kc, ns, 'reports-failure');
    expect(state?.spec).toMatchObject({ OK: false, Errors: ['disk full on /data', 'second error'] });
    expect(state?.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('1');
  });

  it('times a silent pod out at the deadline, removes it, and says what was seen', async () => {
    await createCheck(
      kc,
      ns,
      'silent',
      { containers: [nodeContainer('setInterval(() => {}, 1000)')] },
      { timeout: '4s' },
    );
    const result = await runKhrun(args('silent'));
    expectOutcome(result, { kind: 'TimedOut', ok: false });
    const state = await readState(kc, ns, 'silent');
    expect(state?.spec.Errors[0]).toMatch(
      new RegExp(
        `^Check execution error: ${ns}/silent: timed out waiting for checker pod to report in \\(pod silent-\\d+ was Running`,
      ),
    );
    expect(state?.spec.RunDuration).toMatch(GO_DURATION);
    await waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: `${CHECK_NAME_LABEL}=silent`,
      decide: (items) => (items.size === 0 ? true : undefined),
      timeoutMs: 30_000,
      description: 'the timed-out pod to be gone',
    });
  });

  it('fails a pod that exits without reporting long before the timeout, with its exit code and output', async () => {
    await createCheck(
      kc,
      ns,
      'exits-early',
      {
        containers: [
          nodeContainer("console.error('cannot reach widget service'); process.exit(3)", {
            terminationMessagePolicy: 'FallbackToLogsOnError',
          }),
        ],
      },
      { timeout: '5m' },
    );
    const started = Date.now();
    const result = await runKhrun(args('exits-early'));
    expect(Date.now() - started).toBeLessThan(60_000);
    const state = await readState(kc, ns, 'exits-early');
    expect(state?.spec.OK).toBe(false);
    expect(state?.spec.Errors[0]).toMatch(
      /exited without reporting: container check exited with code 3 \(Error\): cannot reach widget service/,
    );
    expect(outcomeOf(result).kind).toBe('ExecutionError');
  });

  it('fails at once when the image cannot be pulled', async () => {
    await createCheck(
      kc,
      ns,
      'no-image',
      { containers: [{ name: 'check', image: 'registry.khrun.invalid/unpullable:1', command: ['true'] }] },
      { timeout: '5m' },
    );
    const result = await runKhrun(args('no-image'));
    const state = await readState(kc, ns, 'no-image');
    expect(state?.spec.Errors[0]).toMatch(
      /failed to start: container check: (ErrImagePull|ImagePullBackOff)/,
    );
    expect(outcomeOf(result).kind).toBe('ExecutionError');
    await waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: `${CHECK_NAME_LABEL}=no-image`,
      decide: (items) => (items.size === 0 ? true : undefined),
      timeoutMs: 30_000,
      description: 'the pod that could not start to be removed',
    });
  });

  it("times out an unschedulable pod with the scheduler's reason in the error", async () => {
    await createCheck(
      kc,
      ns,
      'unschedulable',
      { containers: [nodeContainer('0', { resources: { requests: { cpu: '500' } } })] },
      { timeout: '4s' },
    );
    await runKhrun(args('unschedulable'));
    const state = await readState(kc, ns, 'unschedulable');
    expect(state?.spec.Errors[0]).toMatch(/was Pending; PodScheduled: Unschedulable: .*Insufficient cpu/);
  });

  it('records nothing new when the pod is deleted by someone else before it reported', async () => {
    await createCheck(
      kc,
      ns,
      'deleted-pod',
      { containers: [nodeContainer('setInterval(() => {}, 1000)')] },
      { timeout: '2m' },
    );
    const running = startKhrun(args('deleted-pod'));
    const pod = await waitForRunPod('deleted-pod', 'Running');
    const before = await readState(kc, ns, 'deleted-pod');
    await core.deleteNamespacedPod({ name: pod.metadata?.name ?? '', namespace: ns, gracePeriodSeconds: 0 });
    const result = await running.done;
    expect(result.code).toBe(0);
    expectOutcome(result, { result: 'recorded', kind: 'Skipped' });
    const after = await readState(kc, ns, 'deleted-pod');
    expect(after?.spec.OK).toBe(before?.spec.OK);
    expect(after?.spec.Errors).toEqual(before?.spec.Errors);
    expect(after?.spec.AuthoritativePod).toBe('');
    expect(readActiveRun(after)).toBeUndefined();
  });

  it('rejects a report with a UUID that is not the active run, leaving the khstate untouched', async () => {
    await createCheck(kc, ns, 'wrong-uuid', {
      containers: [
        nodeContainer("setTimeout(() => require('kuberhealthy').ReportSuccess(), 8000)", {
          env: npmClientEnv,
        }),
      ],
    });
    const running = startKhrun(args('wrong-uuid'));
    const pod = await waitForRunPod('wrong-uuid', 'Running');
    const url = pod.spec?.containers[0]?.env?.find((e) => e.name === 'KH_REPORTING_URL')?.value ?? '';
    const before = await readState(kc, ns, 'wrong-uuid');
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'kh-run-uuid': '7c1f3a52-0000-4000-8000-000000000000', 'content-type': 'application/json' },
      body: JSON.stringify({ OK: false, Errors: ['forged'] }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/report rejected/);
    const after = await readState(kc, ns, 'wrong-uuid');
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expectOutcome(await running.done, { kind: 'Succeeded' });
  });

  it('rejects a late report from the previous run', async () => {
    await createCheck(kc, ns, 'late-report', {
      containers: [nodeContainer("require('kuberhealthy').ReportSuccess()", { env: npmClientEnv })],
    });
    await runKhrun(args('late-report'));
    const firstUuid = (await readState(kc, ns, 'late-report'))?.spec.uuid ?? '';
    // The second run's pod waits, so the run is active while the old run's report arrives.
    await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHCHECK_PLURAL,
      namespace: ns,
      name: 'late-report',
      body: [
        {
          op: 'replace',
          path: '/spec/podSpec/containers/0/command/2',
          value: "setTimeout(() => require('kuberhealthy').ReportSuccess(), 8000)",
        },
      ],
    });
    const second = startKhrun(args('late-report'));
    const pod = await waitForRunPod('late-report', 'Running');
    expect(pod.metadata?.labels?.[RUN_ID_LABEL]).not.toBe(firstUuid);
    const url = pod.spec?.containers[0]?.env?.find((e) => e.name === 'KH_REPORTING_URL')?.value ?? '';
    const before = await readState(kc, ns, 'late-report');
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'kh-run-uuid': firstUuid },
      body: '{"OK":true,"Errors":[]}',
    });
    expect(res.status).toBe(400);
    // The URL is signed for the second run: a header naming the first is refused before any API request.
    expect(await res.text()).toMatch(/names another run than the reporting URL/);
    expect((await readState(kc, ns, 'late-report'))?.metadata.resourceVersion).toBe(
      before?.metadata.resourceVersion,
    );
    expectOutcome(await second.done, { kind: 'Succeeded' });
  });

  it('runs two concurrent invocations of one check as exactly one run', async () => {
    await createCheck(kc, ns, 'overlap', {
      containers: [
        nodeContainer("setTimeout(() => require('kuberhealthy').ReportSuccess(), 2000)", {
          env: npmClientEnv,
        }),
      ],
    });
    const [a, b] = await Promise.all([runKhrun(args('overlap')), runKhrun(args('overlap'))]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const results = [outcomeOf(a).result, outcomeOf(b).result].sort();
    expect(results).toEqual(['busy', 'recorded']);
    expect(await checkPods('overlap')).toHaveLength(1);
  });

  it('recovers a run whose runner was SIGKILLed: the next invocation adopts it and records the outcome', async () => {
    await createCheck(kc, ns, 'killed', {
      containers: [
        nodeContainer("setTimeout(() => require('kuberhealthy').ReportSuccess(), 3000)", {
          env: npmClientEnv,
        }),
      ],
    });
    const first = startKhrun(args('killed'), { KHRUN_LEASE_SECONDS: '2' });
    await waitForRunPod('killed', 'Running');
    first.child.kill('SIGKILL');
    await first.done;
    const orphaned = await readState(kc, ns, 'killed');
    expect(readActiveRun(orphaned)).toBeDefined();
    // The lease (2 s) has to run out before the run can be adopted; until then a new invocation skips.
    const next = await waitForAdoption(['killed'], { KHRUN_LEASE_SECONDS: '2' });
    expect(next).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
    const state = await readState(kc, ns, 'killed');
    expect(state?.spec.uuid).toBe(orphaned?.spec.uuid);
    const live = (await checkPods('killed')).filter(
      (p) => !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    );
    expect(live).toHaveLength(0);
  });

  it("finishes, in the next invocation, a run whose timeout outlasts the invocation's budget (SIGTERM)", async () => {
    await createCheck(
      kc,
      ns,
      'budget',
      {
        containers: [
          nodeContainer("setTimeout(() => require('kuberhealthy').ReportSuccess(), 3000)", {
            env: npmClientEnv,
          }),
        ],
      },
      { timeout: '2m' },
    );
    const first = startKhrun(args('budget'));
    await waitForRunPod('budget', 'Running');
    first.child.kill('SIGTERM');
    const interrupted = await first.done;
    expect(interrupted.code).toBe(1);
    expectOutcome(interrupted, { result: 'interrupted' });
    const second = await runKhrun(args('budget'));
    expectOutcome(second, { result: 'recorded', kind: 'Succeeded', adopted: true });
  });

  it('removes the khstate and the pod when the khcheck is deleted mid-run', async () => {
    await createCheck(
      kc,
      ns,
      'goes-away',
      { containers: [nodeContainer('setInterval(() => {}, 1000)')] },
      { timeout: '2m' },
    );
    const running = startKhrun(args('goes-away'));
    await waitForRunPod('goes-away', 'Running');
    await kc.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHCHECK_PLURAL,
      namespace: ns,
      name: 'goes-away',
    });
    const result = await running.done;
    expect(result.code).toBe(0);
    expectOutcome(result, { result: 'check-deleted' });
    expect(await readState(kc, ns, 'goes-away')).toBeNull();
  });

  it('records an invalid khcheck as an execution error and exits 0; a missing one exits 2', async () => {
    await createCheck(kc, ns, 'bad-timeout', { containers: [nodeContainer('0')] }, { timeout: '5 min' });
    const result = await runKhrun(args('bad-timeout'));
    expect(result.code).toBe(0);
    const state = await readState(kc, ns, 'bad-timeout');
    expect(state?.spec.OK).toBe(false);
    expect(state?.spec.Errors[0]).toMatch(
      new RegExp(`^Check execution error: ${ns}/bad-timeout: spec.timeout "5 min"`),
    );
    expect(state?.spec.RunDuration).toBe('0s');
    const missing = await runKhrun(args('does-not-exist'));
    expect(missing.code).toBe(2);
    expect(missing.stdout + missing.stderr).toMatch(/khcheck .*does-not-exist not found/);
  });
});

/** Matches the runner's JSON outcome; on mismatch the message carries the outcome and the runner's log. */
function expectOutcome(result: KhrunResult, expected: Record<string, unknown>) {
  const outcome = outcomeOf(result);
  expect(
    outcome,
    `${JSON.stringify(outcome)}\n${result.stdout.slice(-3000)}\n${result.stderr.slice(-2000)}`,
  ).toMatchObject(expected);
}

/** Reruns the check until an invocation adopts the orphaned run (each invocation before that skips). */
async function waitForAdoption(
  check: string[],
  env: Record<string, string>,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const outcome = outcomeOf(await runKhrun(args(check[0] ?? ''), env));
    if (outcome.result !== 'busy') return outcome;
    if (Date.now() > deadline) throw new Error('no invocation adopted the orphaned run within 30 s');
  }
}
