import { loadavg } from 'node:os';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { limiter } from '../../lib/core/limit.ts';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import type { RowContext } from './fleet-v3.ts';
import { FLEET_CHECKS_PER_NAMESPACE, fleetCheck } from './fleet-v3-checks.ts';
import { type RowCpu, rowCpuMeter } from './row-cpu.ts';
import { scaleNamespace } from './scale-setup.ts';
import { fmtMs, type Summary, summarize } from './stats.ts';

// The node alone (issue 27 item 2: "where the local cluster is the limit, say so with the evidence"): the
// same checker pods as a fleet row's, created at once by the admin with no system running them, timed until
// every one has ended. Neither khrun nor v3 can record a check before its pod ran, so this is the floor
// under their rows of the same size on this node.

export interface NodeRow {
  checks: number;
  /** Which round of its size, as FleetRow's. */
  round?: number;
  /** First create to the last pod seen ended (Succeeded or Failed); undefined when not all ended in time. */
  allEndedMs?: number;
  ended: number;
  /** A pod's create (this process's answer) to its container's start (the process kubelet's report). */
  podCreateToStartMs: Summary;
  podCreatesPerSecond?: number;
  /** Where the machine's CPU went from the first create until every pod had ended; absent in older results. */
  cpu?: RowCpu;
  loadAverage: { before: number[]; after: number[] };
}

const LABEL = 'khrun.dev/bench-node-row';
/** Creates in flight: the API server's pace, as khrun's runners create theirs (all at once). */
const CREATES_AT_ONCE = 32;
const loads = () => loadavg().map((x) => Math.round(x * 100) / 100);

/** The namespaces of a node row: `fv3-n-<n>-<i>`, as many pods each as the systems' rows put checks. */
export const nodeRowNamespaces = (n: number) =>
  Array.from({ length: Math.ceil(n / FLEET_CHECKS_PER_NAMESPACE) }, (_, i) => `fv3-n-${n}-${i}`);

/**
 * n pods of the fleet check's podSpec (v2.7.1's test-check, restartPolicy Never, no KH_REPORTING_URL: it
 * exits at once, as it would right after its report), 32 creates in flight, in namespaces of 25. The caller
 * removes the namespaces (nodeRowNamespaces).
 */
export async function nodeRow(ctx: RowContext, n: number, timeoutMs: number): Promise<NodeRow> {
  const kc = ctx.bench.cluster.kubeConfig;
  const core = kc.makeApiClient(CoreV1Api);
  const before = loads();
  const namespaces = nodeRowNamespaces(n);
  for (const ns of namespaces) await scaleNamespace(kc, ns);
  const check = (await fleetCheck(ctx.moduleDir, 'khcheck'))('x', 'x') as unknown as {
    spec: { podSpec: V1Pod['spec'] };
  };
  const spec = { ...check.spec.podSpec!, restartPolicy: 'Never' };
  const createdAt = new Map<string, number>();
  const ended = new Set<string>();
  const abort = new AbortController();
  let t0 = Date.now();
  const done = waitForSet<V1Pod, true>({
    kc,
    path: '/api/v1/pods',
    labelSelector: LABEL,
    signal: abort.signal,
    timeoutMs,
    description: `all ${n} pods of the node row to end`,
    decide: (items) => {
      for (const p of items.values())
        if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed')
          ended.add(`${p.metadata?.namespace}/${p.metadata?.name}`);
      return ended.size >= n ? true : undefined;
    },
  });
  done.catch(() => undefined);
  const slots = limiter(CREATES_AT_ONCE);
  const meter = await rowCpuMeter(ctx.bench);
  t0 = Date.now();
  const creates = Array.from({ length: n }, (_, i) => {
    const namespace = namespaces[Math.floor(i / FLEET_CHECKS_PER_NAMESPACE)]!;
    const name = `node-row-${i}`;
    return slots(async () => {
      await core.createNamespacedPod({
        namespace,
        body: { metadata: { name, namespace, labels: { [LABEL]: 'true' } }, spec },
      });
      createdAt.set(`${namespace}/${name}`, Date.now());
    });
  });
  await Promise.all(creates);
  const allEnded = await done.then(
    () => true,
    (error: unknown) => {
      ctx.log(
        `    node alone: the wait ended early: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`,
      );
      return false;
    },
  );
  const endMs = Date.now();
  const cpu = await meter.stop();
  abort.abort();
  // The pods of every round share their names: only processes started in this row are this row's.
  const started = new Map(
    ctx
      .processes()
      .filter((p) => p.startedAtMs >= t0)
      .map((p) => [p.pod, p.startedAtMs]),
  );
  const toStart = [...createdAt].flatMap(([pod, at]) => {
    const s = started.get(pod);
    return s === undefined ? [] : [s - at];
  });
  const times = [...createdAt.values()];
  const span = Math.max(...times) - Math.min(...times);
  ctx.log(`    node alone: ${ended.size}/${n} pods ended after ${fmtMs(endMs - t0)}`);
  return {
    checks: n,
    ...(allEnded ? { allEndedMs: endMs - t0 } : {}),
    ended: ended.size,
    podCreateToStartMs: summarize(toStart),
    ...(span > 0 ? { podCreatesPerSecond: (times.length - 1) / (span / 1000) } : {}),
    cpu,
    loadAverage: { before, after: loads() },
  };
}
