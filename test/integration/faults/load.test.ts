import { randomUUID } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCheckerPod } from '../../../lib/check/pod-builder.ts';
import { validateCheck } from '../../../lib/check/validate-check.ts';
import { silentLog } from '../../../lib/core/log.ts';
import { kubeClient } from '../../../lib/kube/kube-client.ts';
import { kubePort } from '../../../lib/kube/kube-port.ts';
import { type RunningServer, startReportServer } from '../../../lib/report/http-server.ts';
import { kubeCallerLookup } from '../../../lib/report/kube-lookup.ts';
import { newKhState, readAcceptedReport } from '../../../lib/state/khstate.ts';
import { claimRun } from '../../../lib/state/record.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, uniqueName } from '../helpers/cluster.ts';
import { createCheck } from '../helpers/khrun.ts';
import { shContainer } from '../helpers/pods.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms, quantile } from './helpers/fault-table.ts';
import { pool, post } from './helpers/http-abuse.ts';

// Load: one report endpoint (startReportServer, as `khrun serve` and each runner host it) against the
// real control plane, with CHECKS checks each in an active run whose checker pod exists in the API as the
// pod builder makes it (run-id label, check-name annotation, KH_RUN_UUID), bound to a node no kubelet
// serves, so nothing runs it. Their reports are fired at once, at most IN_FLIGHT at a time; every one
// must land in its khstate.

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const CHECKS = Number(process.env.KHRUN_FAULTS_LOAD_CHECKS ?? 200);
const IN_FLIGHT = Number(process.env.KHRUN_FAULTS_LOAD_IN_FLIGHT ?? 32);
let ns: string;
let node: string;
let server: RunningServer;
const runs: Array<{ check: string; uuid: string; ok: boolean; errors: string[] }> = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-load');
  node = uniqueName('nowhere');
  // A Node object with no kubelet behind it: pods bound to it stay Pending, and the pod garbage
  // collector leaves them alone (it removes pods bound to nodes that do not exist).
  await core.createNode({ body: { metadata: { name: node, labels: { 'khrun.io/test': 'true' } } } });
  const client = kubeClient(kc);
  const port = kubePort(client);
  server = await startReportServer(
    {
      lookup: kubeCallerLookup(client, { namespaces: [ns] }),
      state: { read: port.readState, replace: port.replaceState },
      clock: { nowMs: () => Date.now() },
      log: silentLog,
      server: 'fault-load',
    },
    // The reports carry the kh-run-uuid header to the bare path, as v2's clients send them.
    {
      host: '127.0.0.1',
      port: 0,
      access: { key: undefined, unsigned: 'header', scope: { namespaces: [ns] } },
      // Every checker here reports from 127.0.0.1; in a cluster each has its own pod IP, so the per-source
      // cap on unsigned reports (a few per address) is lifted to the test's concurrency.
      maxUnsignedPerSource: IN_FLIGHT,
    },
  );
  const nowMs = Date.now();
  await pool(CHECKS, 16, async (i) => {
    const check = `load-${i}`;
    const source = await createCheck(
      kc,
      ns,
      check,
      { containers: [shContainer('check', 'exit 0')] },
      { timeout: '10m' },
    );
    const valid = validateCheck(source);
    if (!valid.ok) throw new Error(valid.reason);
    const uuid = randomUUID();
    const run = {
      uuid,
      startedAtMs: nowMs,
      deadlineMs: nowMs + 600_000,
      pod: `${check}-${Math.floor(nowMs / 1000)}`,
      runner: 'fault-load',
      leaseUntilMs: nowMs + 600_000,
    };
    await port.createState(claimRun(newKhState(check, ns), run));
    const pod = buildCheckerPod({
      check: valid.check,
      runUuid: uuid,
      reportingUrl: server.url,
      deadlineEpochMs: run.deadlineMs,
      nowEpochMs: nowMs,
    });
    pod.metadata = { ...pod.metadata, name: run.pod };
    pod.spec = { ...pod.spec!, nodeName: node };
    await core.createNamespacedPod({ namespace: ns, body: pod });
    const ok = i % 5 !== 0;
    runs[i] = { check, uuid, ok, errors: ok ? [] : [`load check ${i}: the widget answered 503`] };
  });
}, 300_000);

afterAll(async () => {
  await server?.close();
  // Nobody runs these pods, so nobody would confirm a graceful deletion: delete them at once.
  await core.deleteCollectionNamespacedPod({ namespace: ns, gracePeriodSeconds: 0 }).catch(() => undefined);
  await core.deleteNode({ name: node }).catch(() => undefined);
  await dropNamespace(kc, ns);
}, 120_000);

describe('the report endpoint under many concurrent reporters', () => {
  it(`${CHECKS} checkers report at once (${IN_FLIGHT} in flight): every report lands in its khstate`, async () => {
    const row = faultScenario(`load: ${CHECKS} checkers reporting at once to one report endpoint`);
    const started = performance.now();
    // A request that failed without an answer counts as answered with status 0 and the error.
    const answers = await pool(CHECKS, IN_FLIGHT, (i) => {
      const r = runs[i]!;
      return post(server.url, JSON.stringify({ OK: r.ok, Errors: r.errors }), { uuid: r.uuid }).catch(
        (error: unknown) => ({ status: 0, text: String(error), ms: performance.now() - started }),
      );
    });
    const seconds = (performance.now() - started) / 1000;

    const list = (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
      namespace: ns,
    })) as {
      items: KhState[];
    };
    const byName = new Map(list.items.map((s) => [s.metadata.name, s]));
    const lost = runs.filter((r) => {
      const state = byName.get(r.check) ?? null;
      const report = readAcceptedReport(state);
      return !(
        report?.uuid === r.uuid &&
        report.ok === r.ok &&
        JSON.stringify(report.errors) === JSON.stringify(r.errors) &&
        state?.spec.OK === r.ok
      );
    });
    const latencies = answers.map((a) => a.ms);
    await row.record({
      fault: `load: ${CHECKS} checkers reporting at once to one report endpoint, ${IN_FLIGHT} in flight`,
      runs: CHECKS,
      outcome: `${answers.filter((a) => a.status === 200).length}/${answers.length} accepted, ${runs.length - lost.length} in their khstates; p50 ${ms(quantile(latencies, 0.5))}, p99 ${ms(quantile(latencies, 0.99))}, max ${ms(Math.max(...latencies))}; ${Math.round(CHECKS / seconds)} reports/s (each: find the pod by run id, read and write the khstate)`,
      // Each report the test sent is one run's outcome; recorded: its khstate holds that report.
      reported: answers.length,
      recorded: runs.length - lost.length,
    });
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text}`)).toEqual([]);
    expect(lost.map((r) => r.check)).toEqual([]);
  }, 120_000);
});
