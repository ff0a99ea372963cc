import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
  type HealthCheckSpec,
} from '../../lib/healthcheck/resources.ts';
import { parseHistory } from '../../lib/state/history.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { goCheckerV3Binary } from './helpers/go-checker-v3.ts';
import { type KhrunResult, outcomeOf, runKhrun, startKhrun } from './helpers/khrun.ts';

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
let ns: string;
let checker: string;

beforeAll(async () => {
  [ns, checker] = await Promise.all([freshNamespace(kc, 'hc'), goCheckerV3Binary()]);
}, 20 * 60_000);
afterAll(async () => {
  await dropNamespace(kc, ns);
});

/** A HealthCheck as v3's docs write one, its checker the v3 Go checkclient program with args. */
async function createHealthCheck(name: string, args: string[], spec: Partial<HealthCheckSpec> = {}) {
  const body: HealthCheck = {
    apiVersion: HC_API_VERSION,
    kind: 'HealthCheck',
    metadata: { name, namespace: ns },
    spec: {
      runInterval: '10m',
      timeout: '30s',
      podSpec: {
        spec: { containers: [{ name: 'check', image: 'example/v3-check:1', command: [checker, ...args] }] },
      },
      ...spec,
    },
  };
  await custom.createNamespacedCustomObject({ ...co, namespace: ns, body });
}

const readHc = async (name: string) =>
  (await custom.getNamespacedCustomObject({ ...co, namespace: ns, name })) as HealthCheck;
const args = (name: string) => ['--healthcheck', name, '--namespace', ns, '--output', 'json'];
const podsOf = async (name: string): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `healthcheck=${name}` })).items;

function expectRecorded(result: KhrunResult, fields: Record<string, unknown>) {
  expect(result.code, result.stderr).toBe(0);
  expect(outcomeOf(result)).toMatchObject({ result: 'recorded', ...fields });
}

/** The status keys v3's HealthCheckStatus serialises (omitempty ones only when set). */
const V3_STATUS_KEYS = new Set([
  'ok',
  'errors',
  'runDuration',
  'namespace',
  'currentUUID',
  'lastRunUnix',
  'successCount',
  'failureCount',
  'lastOKUnix',
  'lastFailureUnix',
  'additionalMetadata',
]);

describe('khrun run --healthcheck: Kuberhealthy v3 HealthChecks on the local cluster', () => {
  it("records a success reported by v3.0.0's Go checkclient at /check, in the status as v3 writes it", async () => {
    await createHealthCheck('v3-ok', ['success']);
    const startedUnix = Math.floor(Date.now() / 1000);
    const result = await runKhrun(args('v3-ok'));
    expectRecorded(result, { kind: 'Succeeded', ok: true });

    const hc = await readHc('v3-ok');
    const status = hc.status;
    expect(status).toMatchObject({ ok: true, currentUUID: '', namespace: ns, successCount: 1 });
    expect(status?.errors).toBeUndefined();
    expect(status?.failureCount).toBeUndefined();
    expect(Object.keys(status ?? {}).every((k) => V3_STATUS_KEYS.has(k))).toBe(true);
    expect(Number.isInteger(status?.runDuration)).toBe(true);
    expect(status?.runDuration).toBeGreaterThan(0);
    expect(status?.lastRunUnix).toBeGreaterThanOrEqual(startedUnix - 1);
    expect(status?.lastOKUnix).toBeGreaterThanOrEqual(status?.lastRunUnix ?? 0);
    expect(hc.metadata.annotations?.[ANNOTATION.run]).toBeUndefined();
    expect(parseHistory(hc.metadata.annotations?.[ANNOTATION.history])).toMatchObject([
      { kind: 'Succeeded', ok: true },
    ]);

    const [pod, ...others] = await podsOf('v3-ok');
    expect(others).toHaveLength(0);
    const uuid = pod?.metadata?.labels?.['kh-run-uuid'] ?? '';
    expect(uuid).not.toBe('');
    expect(pod?.metadata?.name).toBe(`v3-ok-${uuid.slice(0, 5)}`);
    expect(pod?.metadata?.annotations).toMatchObject({
      createdBy: 'kuberhealthy',
      'kh-run-uuid': uuid,
      kuberhealthyCheckName: 'v3-ok',
    });
    expect(pod?.metadata?.annotations?.createdTime).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/);
    expect(pod?.metadata?.ownerReferences).toMatchObject([
      {
        apiVersion: HC_API_VERSION,
        kind: 'HealthCheck',
        name: 'v3-ok',
        uid: hc.metadata.uid,
        controller: true,
      },
    ]);
    const env = Object.fromEntries((pod?.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(new URL(env.KH_REPORTING_URL ?? '').pathname).toBe('/check');
    expect(env.KH_RUN_UUID).toBe(uuid);
    expect(Number(env.KH_CHECK_RUN_DEADLINE)).toBe((status?.lastRunUnix ?? 0) + 30);
  });

  it('records a reported error: ok false, the error, failureCount and lastFailureUnix', async () => {
    await createHealthCheck('v3-fail', ['fail', 'upstream answered 503']);
    expectRecorded(await runKhrun(args('v3-fail')), { kind: 'Failed', ok: false });
    const status = (await readHc('v3-fail')).status;
    expect(status).toMatchObject({
      ok: false,
      errors: ['upstream answered 503'],
      currentUUID: '',
      failureCount: 1,
    });
    expect(status?.lastFailureUnix).toBeGreaterThanOrEqual(status?.lastRunUnix ?? Number.POSITIVE_INFINITY);
    expect(status?.successCount).toBeUndefined();
  });

  it('times out a checker that never reports, at its timeout, and counts a failure', async () => {
    await createHealthCheck('v3-silent', ['silent'], { timeout: '4s' });
    expectRecorded(await runKhrun(args('v3-silent')), { kind: 'TimedOut', ok: false });
    const status = (await readHc('v3-silent')).status;
    expect(status).toMatchObject({ ok: false, currentUUID: '', failureCount: 1 });
    expect(status?.errors?.[0]).toMatch(
      new RegExp(`^Check execution error: ${ns}/v3-silent: timed out waiting for checker pod to report in`),
    );
    // The timed-out pod is deleted (graceful): gone once the kubelet confirms.
    await waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: 'healthcheck=v3-silent',
      decide: (items) => (items.size === 0 ? true : undefined),
      timeoutMs: 30_000,
      description: 'the timed-out pod to be gone',
    });
  });

  it('two invocations at once: one runs the check, the other finds it busy; one pod', async () => {
    await createHealthCheck('v3-overlap', ['success', '2s']);
    const [a, b] = await Promise.all([runKhrun(args('v3-overlap')), runKhrun(args('v3-overlap'))]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect([outcomeOf(a).result, outcomeOf(b).result].sort()).toEqual(['busy', 'recorded']);
    expect(await podsOf('v3-overlap')).toHaveLength(1);
    expect((await readHc('v3-overlap')).status?.successCount).toBe(1);
  });

  it('recovers a run whose runner was SIGKILLed: the next invocation adopts it, one success counted', async () => {
    await createHealthCheck('v3-killed', ['success', '4s']);
    const first = startKhrun(args('v3-killed'), { KHRUN_LEASE_SECONDS: '2' });
    await waitFor<V1Pod, V1Pod>(kc, {
      path: `/api/v1/namespaces/${ns}/pods`,
      labelSelector: 'healthcheck=v3-killed',
      decide: (items) => [...items.values()].find((p) => p.status?.phase === 'Running'),
      timeoutMs: 60_000,
      description: 'a Running pod of v3-killed',
    });
    first.child.kill('SIGKILL');
    await first.done;
    const orphaned = (await readHc('v3-killed')).status?.currentUUID;
    expect(orphaned).toBeTruthy();
    const deadline = Date.now() + 30_000;
    let outcome = outcomeOf(await runKhrun(args('v3-killed'), { KHRUN_LEASE_SECONDS: '2' }));
    while (outcome.result === 'busy' && Date.now() < deadline)
      outcome = outcomeOf(await runKhrun(args('v3-killed'), { KHRUN_LEASE_SECONDS: '2' }));
    expect(outcome).toMatchObject({ result: 'recorded', kind: 'Succeeded', adopted: true });
    const hc = await readHc('v3-killed');
    expect(hc.status).toMatchObject({ ok: true, currentUUID: '', successCount: 1 });
    expect(parseHistory(hc.metadata.annotations?.[ANNOTATION.history])).toHaveLength(1);
  });

  it('says what to do for a HealthCheck that does not exist (exit 2)', async () => {
    const result = await runKhrun(args('no-such-check'));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('kubectl get healthchecks');
  });
});
