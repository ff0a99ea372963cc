import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleCheckReport } from '../../lib/healthcheck/handle-check-report.ts';
import { healthCheckPort } from '../../lib/healthcheck/healthcheck-port.ts';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { FOREIGN_RUNNER } from '../../lib/healthcheck/state-view.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { type IterationConfig, runIteration } from '../../lib/run/iteration.ts';
import { parseHistory } from '../../lib/state/history.ts';
import { ANNOTATION, readActiveRun } from '../../lib/state/khstate.ts';
import { FakeHealthCheckApi } from './fakes/fake-healthcheck-api.ts';

const NS = 'checks';
const NAME = 'web';
const T0 = Date.UTC(2025, 5, 1, 12, 0, 0);
const U = [
  'aaaaaaaa-1111-4111-8111-111111111111',
  'bbbbbbbb-2222-4222-8222-222222222222',
  'cccccccc-3333-4333-8333-333333333333',
];
const URL = 'http://10.0.0.1:8080/check?khrun=signed';

function healthCheck(): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name: NAME, namespace: NS },
    spec: {
      timeout: '30s',
      runInterval: '1m',
      extraLabels: { team: 'web' },
      podSpec: {
        metadata: { annotations: { note: 'from-podspec' } },
        spec: {
          initContainers: [{ name: 'prep', image: 'busybox' }],
          containers: [
            { name: 'check', image: 'checker:v3', env: [{ name: 'KH_RUN_UUID', value: 'forged' }] },
          ],
        },
      },
    },
  };
}

const silent = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

function harness() {
  const api = new FakeHealthCheckApi();
  api.put(healthCheck());
  const port = healthCheckPort(api);
  const ids = [...U];
  const deps: AcquireDeps = {
    kube: port,
    clock: { nowMs: () => Date.now() },
    ids: { runUuid: () => ids.shift() ?? 'out-of-ids' },
    log: silent,
  };
  const controller = new AbortController();
  const cfg = (holder: string): IterationConfig => ({
    namespace: NS,
    checkName: NAME,
    runner: holder.split('/')[0] ?? holder,
    holder,
    reportingUrl: URL,
    signal: controller.signal,
  });
  const report = (uuid: string, body: object) =>
    handleCheckReport(
      {
        findRun: async () => null,
        state: { read: port.readState, replace: port.replaceState },
        clock: deps.clock,
        log: silent,
        server: 'report-0',
      },
      {
        caller: { via: 'signed', run: { namespace: NS, checkName: NAME, uuid, deadlineMs: T0 + 30_000 } },
        uuid,
        body: JSON.stringify(body),
      },
    );
  return { api, port, deps, cfg, report };
}

const podOf = (api: FakeHealthCheckApi, i = 0) => api.createdPods[i] as V1Pod;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => vi.useRealTimers());

describe('runIteration over the HealthCheck port', () => {
  it('runs a HealthCheck: v3 pod contract, the claim as a status write of currentUUID, the result as v3 writes it', async () => {
    const h = harness();
    const running = runIteration(h.deps, h.cfg('runner-a/1'));
    await h.api.until(() => h.api.createdPods.length === 1);

    // The claim: status (currentUUID, lastRunUnix) first, then khrun's lease in annotations.
    const [claim, lease] = h.api.writes;
    expect(claim?.kind).toBe('status');
    expect(claim?.stored.status).toEqual({
      ok: false,
      currentUUID: U[0],
      lastRunUnix: T0 / 1000,
    });
    expect(lease?.kind).toBe('main');
    expect(readActiveRun({ metadata: lease?.stored.metadata } as never)?.holder).toBe('runner-a/1');

    const pod = podOf(h.api);
    expect(pod.metadata?.name).toBe(`${NAME}-${U[0]?.slice(0, 5)}`);
    expect(pod.metadata?.labels).toEqual({ team: 'web', healthcheck: NAME, 'kh-run-uuid': U[0] });
    expect(pod.metadata?.annotations).toMatchObject({
      note: 'from-podspec',
      createdBy: 'kuberhealthy',
      'kh-run-uuid': U[0],
      createdTime: '2025-06-01 12:00:00 +0000 UTC',
      kuberhealthyCheckName: NAME,
    });
    expect(pod.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'kuberhealthy.github.io/v2',
        kind: 'HealthCheck',
        name: NAME,
        uid: `uid-${NAME}`,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(pod.spec?.restartPolicy).toBeUndefined();
    for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
      const env = Object.fromEntries(
        (c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom?.fieldRef?.fieldPath]),
      );
      expect(env).toEqual({
        KH_REPORTING_URL: URL,
        KH_RUN_UUID: U[0],
        KH_CHECK_RUN_DEADLINE: String(T0 / 1000 + 30),
        KH_POD_NAMESPACE: 'metadata.namespace',
      });
    }

    h.api.setPodStatus(NS, pod.metadata?.name ?? '', { phase: 'Running' });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await h.report(U[0] as string, { ok: true, errors: [] })).toEqual({
      status: 200,
      message: 'report accepted',
    });
    h.api.setPodStatus(NS, pod.metadata?.name ?? '', { phase: 'Succeeded', containerStatuses: [] });
    const result = await running;
    expect(result).toMatchObject({ kind: 'recorded', outcome: { kind: 'Succeeded', ok: true } });

    const hc = h.api.check(NS, NAME);
    expect(hc.status).toEqual({
      ok: true,
      runDuration: 2_000_000_000,
      namespace: NS,
      currentUUID: '',
      lastRunUnix: T0 / 1000,
      successCount: 1,
      lastOKUnix: T0 / 1000 + 2,
    });
    expect(hc.metadata.annotations?.[ANNOTATION.run]).toBeUndefined();
    expect(parseHistory(hc.metadata.annotations?.[ANNOTATION.history])).toHaveLength(1);
    // The recording: status (result, currentUUID cleared) before the history.
    const recording = h.api.writes.slice(-2).map((w) => w.kind);
    expect(recording).toEqual(['status', 'main']);
  });

  it('records a failure report: ok false, errors, failureCount and lastFailureUnix', async () => {
    const h = harness();
    const running = runIteration(h.deps, h.cfg('runner-a/1'));
    await h.api.until(() => h.api.createdPods.length === 1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await h.report(U[0] as string, { ok: true, errors: ['contradiction'] })).status).toBe(400);
    expect((await h.report(U[0] as string, { ok: false, errors: ['upstream 503'] })).status).toBe(200);
    expect((await h.report(U[0] as string, { ok: false, errors: ['again'] })).status).toBe(400);
    h.api.setPodStatus(NS, podOf(h.api).metadata?.name ?? '', { phase: 'Succeeded', containerStatuses: [] });
    await running;
    expect(h.api.check(NS, NAME).status).toMatchObject({
      ok: false,
      errors: ['upstream 503'],
      currentUUID: '',
      failureCount: 1,
      lastFailureUnix: T0 / 1000 + 1,
    });
    expect((await h.report(U[0] as string, { ok: true })).status).toBe(410);
  });

  it('two invocations at once: one claims and runs, the other is busy; one pod', async () => {
    const h = harness();
    const [a, b] = [runIteration(h.deps, h.cfg('runner-a/1')), runIteration(h.deps, h.cfg('runner-b/2'))];
    await h.api.until(() => h.api.createdPods.length === 1);
    await h.report(U[0] as string, { ok: true });
    h.api.setPodStatus(NS, podOf(h.api).metadata?.name ?? '', { phase: 'Succeeded', containerStatuses: [] });
    const kinds = (await Promise.all([a, b])).map((r) => r.kind).sort();
    expect(kinds).toEqual(['busy', 'recorded']);
    expect(h.api.createdPods).toHaveLength(1);
    expect(h.api.check(NS, NAME).status?.successCount).toBe(1);
  });

  it('a runner killed between the claim and its lease: the run is nobody’s until its deadline, then closed as timed out', async () => {
    const h = harness();
    h.api.beforeWrite = (kind) => {
      if (kind === 'main') throw new Error('process killed');
    };
    await expect(runIteration(h.deps, h.cfg('runner-a/1'))).rejects.toThrow('process killed');
    h.api.beforeWrite = undefined;
    expect(h.api.check(NS, NAME).status?.currentUUID).toBe(U[0]);
    expect(h.api.createdPods).toHaveLength(0);

    const view = await h.port.readState(NS, NAME);
    expect(readActiveRun(view)).toMatchObject({
      uuid: U[0],
      runner: FOREIGN_RUNNER,
      leaseUntilMs: T0 + 30_000,
    });
    expect((await runIteration(h.deps, h.cfg('runner-b/2'))).kind).toBe('busy');

    vi.setSystemTime(T0 + 31_000);
    const next = runIteration(h.deps, h.cfg('runner-c/3'));
    await h.api.until(() => h.api.createdPods.length === 1);
    expect(h.api.check(NS, NAME).status).toMatchObject({ ok: false, failureCount: 1, currentUUID: U[1] });
    await h.report(U[1] as string, { ok: true });
    h.api.setPodStatus(NS, podOf(h.api).metadata?.name ?? '', { phase: 'Succeeded', containerStatuses: [] });
    expect(await next).toMatchObject({ kind: 'recorded', runUuid: U[1] });
    expect(h.api.check(NS, NAME).status).toMatchObject({ ok: true, failureCount: 1, successCount: 1 });
  });
});

describe('the HealthCheck port’s writes', () => {
  it('a stale view never overwrites: its resourceVersion precondition fails', async () => {
    const h = harness();
    const stale = await h.port.readState(NS, NAME);
    await h.api.replace({
      ...h.api.check(NS, NAME),
      metadata: { ...h.api.check(NS, NAME).metadata, labels: { x: 'y' } },
    });
    const edited = {
      ...stale,
      metadata: { ...stale?.metadata, annotations: { [ANNOTATION.consecutiveFailures]: '3' } },
    };
    await expect(h.port.replaceState(edited as never)).rejects.toThrow('Conflict');
  });

  it('re-applies the second write over an unrelated edit, never over another khrun write', async () => {
    const h = harness();
    const view = await h.port.readState(NS, NAME);
    const claimed = {
      ...view,
      metadata: {
        ...view?.metadata,
        annotations: {
          [ANNOTATION.run]: JSON.stringify({
            uuid: 'r1',
            startedAtMs: T0,
            deadlineMs: T0 + 30_000,
            pod: 'p',
            runner: 'a',
            leaseUntilMs: T0 + 30_000,
          }),
        },
      },
    };
    let edits = 0;
    h.api.beforeWrite = (kind) => {
      if (kind !== 'main' || edits++ > 0) return;
      const hc = h.api.check(NS, NAME);
      h.api.put({ ...hc, metadata: { ...hc.metadata, labels: { owner: 'edited' } } });
    };
    const written = await h.port.replaceState(claimed as never);
    expect(readActiveRun(written)?.uuid).toBe('r1');
    expect(h.api.check(NS, NAME).metadata.labels).toEqual({ owner: 'edited' });

    const again = await h.port.readState(NS, NAME);
    const released = { ...again, metadata: { ...again?.metadata, annotations: {} } };
    h.api.beforeWrite = (kind) => {
      if (kind !== 'main') return;
      h.api.beforeWrite = undefined;
      const hc = h.api.check(NS, NAME);
      h.api.put({
        ...hc,
        metadata: {
          ...hc.metadata,
          annotations: { ...hc.metadata.annotations, [ANNOTATION.dispatch]: '{}' },
        },
      });
    };
    await expect(h.port.replaceState(released as never)).rejects.toThrow('Conflict');
  });
});
