import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../../lib/healthcheck/resources.ts';
import { type CompatV3Results, compareStatuses, writeCompatV3 } from '../../compat/v3-results.ts';
import { parsePromText } from '../../helpers/prom-text.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from '../helpers/cluster.ts';
import { goCheckerV3Binary } from '../helpers/go-checker-v3.ts';
import { outcomeOf, repoRoot, runKhrun } from '../helpers/khrun.ts';
import {
  dropV3Finalizers,
  type KuberhealthyV3,
  startKuberhealthyV3,
  V3_FINALIZER,
} from '../helpers/kuberhealthy-v3.ts';

// The same three HealthChecks (one reporting OK, one reporting an error, one never reporting) run by
// Kuberhealthy v3.0.0's controller (built from the module proxy, deployed from its own manifests) in one
// namespace and by khrun in another, on the same cluster; then v3's own /json and /metrics read khrun's.
//
// Keeping v3 off khrun's HealthChecks: v3.0.0 reads KH_TARGET_NAMESPACE into its config and never uses it
// (cmd/kuberhealthy/config.go; the informer and the schedule loop list all namespaces). Its leader tasks
// (schedule loop, informer, reaper, timeouts) run only while it holds the Lease, and its elector runs once.
// So it runs its own three first; then the test takes its Lease, v3 shows kuberhealthy_controller_leader 0
// and keeps serving HTTP; only then are khrun's HealthChecks created. v3 puts its finalizer on every
// HealthCheck its leader sees: none on khrun's shows it never saw them.

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);
const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };

const CHECKS = [
  { name: 'v3-ok', args: ['success'] },
  { name: 'v3-error', args: ['fail', 'upstream answered 503'] },
  { name: 'v3-timeout', args: ['silent'] },
] as const;
const TIMEOUT = '5s';

let v3Ns: string;
let khrunNs: string;
let checker: string;
let v3: KuberhealthyV3 | undefined;

beforeAll(async () => {
  [v3Ns, khrunNs, checker] = await Promise.all([
    freshNamespace(kc, 'kh3'),
    freshNamespace(kc, 'kh3-khrun'),
    goCheckerV3Binary(),
  ]);
  v3 = await startKuberhealthyV3(kc, v3Ns);
}, 20 * 60_000);

afterAll(async () => {
  await v3?.stop();
  // A stopped v3 never removes its finalizer, which would hold its namespace's deletion forever.
  if (v3Ns) await dropV3Finalizers(kc, v3Ns).catch(() => undefined);
  await Promise.all([v3Ns, khrunNs].filter(Boolean).map((ns) => dropNamespace(kc, ns)));
}, 120_000);

function healthCheck(
  namespace: string,
  name: string,
  args: readonly string[],
  finalizers?: string[],
): HealthCheck {
  return {
    apiVersion: HC_API_VERSION,
    kind: 'HealthCheck',
    metadata: { name, namespace, ...(finalizers ? { finalizers } : {}) },
    spec: {
      runInterval: '10m',
      timeout: TIMEOUT,
      podSpec: {
        spec: {
          containers: [{ name: 'check', image: 'example/v3-check:1', command: [checker, ...args] }],
          restartPolicy: 'Never',
        },
      },
    },
  };
}

const create = (namespace: string, name: string, args: readonly string[], finalizers?: string[]) =>
  custom.createNamespacedCustomObject({
    ...co,
    namespace,
    body: healthCheck(namespace, name, args, finalizers),
  });

/**
 * v3's silent check is created holding v3's finalizer. v3.0.0's informer adds the finalizer with an
 * update that races its own scheduler's start of the same check; when the start's LastRunUnix write loses
 * (a conflict, more likely on a loaded machine), StartCheck returns before it arms the run's timeout
 * watcher, and a check that never reports then keeps its currentUUID until v3 is restarted (its run
 * never ends: seen once in CI, 180 s). A check that reports ends either way, so the other two are created
 * as a user would, and may still lose the race (their refusal below covers that).
 */
const v3Finalizers = (check: string) => (check === 'v3-timeout' ? [V3_FINALIZER] : undefined);

/** The HealthChecks of a namespace once each has finished one run (a count written, no run in progress). */
function finished(namespace: string): Promise<Map<string, HealthCheck>> {
  return waitFor<HealthCheck, Map<string, HealthCheck>>(kc, {
    path: `/apis/${HC_GROUP}/${HC_VERSION}/namespaces/${namespace}/${HC_PLURAL}`,
    decide: (items) => {
      const done = [...items.values()].filter(
        (hc) =>
          hc.status?.currentUUID === '' && (hc.status.successCount ?? 0) + (hc.status.failureCount ?? 0) > 0,
      );
      return done.length === CHECKS.length ? new Map(done.map((hc) => [hc.metadata.name, hc])) : undefined;
    },
    // v3's own scheduling decides when its runs end: on 2 cores under a loaded full suite (load ~10) its
    // three first runs once took over 90 s (33 s unloaded); the bound is for a v3 that never finishes.
    timeoutMs: 180_000,
    description: `one finished run of each HealthCheck in ${namespace}`,
  });
}

async function metricsText(): Promise<string> {
  return (await fetch(`${v3!.baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
}

/** Waits, with a deadline, until v3's own metric says it no longer leads. */
async function untilNotLeader(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (/^kuberhealthy_controller_leader 0$/m.test(await metricsText())) return;
    if (Date.now() > deadline) throw new Error(`v3 still leads ${timeoutMs} ms after its Lease was taken`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('Kuberhealthy v3.0.0 and khrun side by side on HealthChecks', () => {
  it('both write the same status fields; v3 reads khrun results on its own /json and /metrics', async () => {
    expect(await metricsText()).toMatch(/^kuberhealthy_controller_leader 1$/m);

    // v3 runs its three (its informer starts each at once).
    for (const c of CHECKS) await create(v3Ns, c.name, c.args, v3Finalizers(c.name));
    const byV3 = await finished(v3Ns);

    // v3 steps down; khrun's three are created only after.
    await v3!.demote('khrun-side-by-side');
    await untilNotLeader(30_000);
    for (const c of CHECKS) await create(khrunNs, c.name, c.args);
    const results = await Promise.all(
      CHECKS.map((c) => runKhrun(['--healthcheck', c.name, '--namespace', khrunNs, '--output', 'json'])),
    );
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    expect(results.map((r) => outcomeOf(r).kind)).toEqual(['Succeeded', 'Failed', 'TimedOut']);
    const byKhrun = await finished(khrunNs);

    // v3 never saw khrun's HealthChecks: no finalizer, and at most one pod each (khrun's). v3's own may lack
    // its finalizer (v3.0.0's informer adds it with an update its scheduler's status write can beat, never
    // retried), so khrun must refuse them from their results as well: each, without --take-over, exit 2
    // (checked below, after the pod list).
    for (const hc of byKhrun.values()) expect(hc.metadata.finalizers ?? []).not.toContain(V3_FINALIZER);
    const khrunPods = await core.listNamespacedPod({ namespace: khrunNs });
    const podChecks = khrunPods.items.map((p) => p.metadata?.labels?.healthcheck).sort();
    // The finished runs' pods are kept; the timed-out run's pod was deleted at its deadline, and may be
    // gone already (the kubelet deletes it once its process is killed): present or not, never twice.
    expect(podChecks.filter((c) => c !== 'v3-timeout')).toEqual(['v3-error', 'v3-ok']);
    expect(podChecks.filter((c) => c === 'v3-timeout').length).toBeLessThanOrEqual(1);
    // (after the pod list: the timed-out run's pod is being deleted meanwhile)
    for (const c of CHECKS) {
      const refused = await runKhrun(['--healthcheck', c.name, '--namespace', v3Ns, '--output', 'json']);
      expect(refused.code, `${c.name}: ${refused.stderr}`).toBe(2);
      expect(refused.stderr + refused.stdout).toMatch(new RegExp(`Kuberhealthy v3 runs ${v3Ns}/${c.name}`));
    }

    const fields = CHECKS.flatMap((c) =>
      compareStatuses({
        check: c.name,
        kuberhealthy: byV3.get(c.name)?.status as Record<string, unknown> | undefined,
        khrun: byKhrun.get(c.name)?.status as Record<string, unknown> | undefined,
        namespaces: { kuberhealthy: v3Ns, khrun: khrunNs },
      }),
    );
    const differ = fields.filter((f) => !f.same);
    // What must agree for v3's tools to read khrun's results as v3's own.
    for (const field of [
      'ok',
      'currentUUID',
      'successCount',
      'failureCount',
      'lastOKUnix',
      'lastFailureUnix',
    ]) {
      expect(
        differ.filter((f) => f.field === field),
        field,
      ).toEqual([]);
    }
    expect(differ.filter((f) => f.field === 'errors').map((f) => f.check)).not.toContain('v3-error');
    for (const f of differ) expect(f.why, `${f.check} ${f.field}`).not.toBe('differs (see the values)');

    // v3's own API reads khrun's results: /json for khrun's namespace, /metrics for all.
    const json = (await (
      await fetch(`${v3!.baseUrl}/json?namespace=${khrunNs}`, { signal: AbortSignal.timeout(10_000) })
    ).json()) as { OK: boolean; CheckDetails: Record<string, { ok: boolean; errors?: string[] }> };
    const families = parsePromText(await metricsText());
    const reads = CHECKS.map((c) => {
      const status = byKhrun.get(c.name)?.status;
      const detail = json.CheckDetails[c.name];
      const sample = families
        .get('kuberhealthy_check')
        ?.samples.find((s) => s.labels.check === c.name && s.labels.namespace === khrunNs);
      return {
        check: c.name,
        json: detail
          ? `ok ${detail.ok}, errors ${JSON.stringify(detail.errors ?? []).replaceAll(khrunNs, '<namespace>')}`
          : '(missing)',
        metric: sample ? `status="${sample.labels.status}" value ${sample.value}` : '(missing)',
        matches:
          detail?.ok === status?.ok &&
          JSON.stringify(detail?.errors ?? []) === JSON.stringify(status?.errors ?? []) &&
          sample?.value === (status?.ok ? 1 : 0),
      };
    });
    expect(reads.filter((r) => !r.matches)).toEqual([]);
    expect(json.OK).toBe(false);

    const out: CompatV3Results = {
      kuberhealthy: 'v3.0.0 (github.com/kuberhealthy/kuberhealthy/v3, controller from the Go module proxy)',
      measured: new Date().toISOString().slice(0, 10),
      how:
        `npm run compat: test/integration/compat/v3-side-by-side.test.ts on the local cluster; 3 HealthChecks ` +
        `(v3.0.0's Go checkclient: success, failure, no report; timeout ${TIMEOUT}), one run each, by v3's ` +
        'controller (its deploy/kustomize/base Deployment, 1 replica) in one namespace and by khrun run ' +
        '--healthcheck (spawned) in another; statuses read from the API server after each run finished',
      separation:
        'v3.0.0 ignores KH_TARGET_NAMESPACE (read, never used); its Lease was taken after its runs, ' +
        'kuberhealthy_controller_leader went to 0 and khrun’s HealthChecks carry no v3 finalizer',
      fields,
      v3ReadsKhrun: reads,
    };
    await writeCompatV3(out);
  }, 300_000);

  it('`khrun status` lists the HealthChecks both ran, by KIND, and -o json under HealthCheckDetails', async () => {
    const scope = ['--namespace', `${v3Ns},${khrunNs}`];
    const table = await khrunCli(['status', ...scope]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KIND\s+CHECK\s+NAMESPACE\s+OK\s/);
    for (const ns of [v3Ns, khrunNs]) {
      const row = (name: string) =>
        lines.find((l) => new RegExp(`^HealthCheck\\s+${name}\\s+${ns}\\s`).test(l));
      expect(row('v3-ok')).toMatch(/\strue\s/);
      expect(row('v3-error')).toMatch(/\sfalse\s.*upstream answered 503$/);
      expect(row('v3-timeout')).toMatch(/\sfalse\s/);
    }
    const described = await khrunCli(['describe', 'v3-error', '--namespace', v3Ns]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/^Kind:\s+HealthCheck /m);
    expect(described.stdout).toMatch(/^Status:\s+FAILING/m);
    const json = await khrunCli(['status', ...scope, '-o', 'json']);
    const doc = JSON.parse(json.stdout) as {
      OK: boolean;
      HealthCheckDetails: Record<string, { ok: boolean }>;
    };
    expect(doc.OK).toBe(false);
    expect(
      Object.entries(doc.HealthCheckDetails)
        .map(([key, d]) => `${key} ${d.ok}`)
        .sort(),
    ).toEqual(
      [v3Ns, khrunNs]
        .flatMap((ns) => [`${ns}/v3-error false`, `${ns}/v3-ok true`, `${ns}/v3-timeout false`])
        .sort(),
    );
  }, 60_000);
});

/** The khrun CLI (any command) against the test cluster, piped (no color). */
function khrunCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), ...args], {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}
