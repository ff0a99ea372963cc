import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { kuberhealthyV3Binary } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { kuberhealthyV2Source } from '../integration/helpers/kuberhealthy-v2.ts';
import { repoRoot } from './bench-cluster.ts';
import { deployedTickEnv } from './deployed-tick-env.ts';
import { type NodeRow, nodeRow, nodeRowNamespaces } from './fleet-node-row.ts';
import { deployed, type FleetContext } from './fleet-sections.ts';
import { khrunRow, type RowContext, v3Row } from './fleet-v3.ts';
import { FLEET_CHECK, FLEET_CHECKS_PER_NAMESPACE, fleetRowNamespaces } from './fleet-v3-checks.ts';
import type { FleetRow } from './fleet-v3-figures.ts';
import { declareNodeRoom } from './scale-setup.ts';
import { fmtMs } from './stats.ts';
import { removeAll } from './steady-state.ts';

// The fleet beside Kuberhealthy v3 (issue 27 item 2): for each size, khrun's tick and then v3.0.0's
// controller on the same checks, on the same node, one system at a time. Bounded: a row predicted to
// overrun the section's time is left out (with a note), and each row ends at its own deadline.

/** The section's time, everything included (KHRUN_BENCH_FLEET_MINUTES, default 60). */
const BUDGET_MS = (Number(process.env.KHRUN_BENCH_FLEET_MINUTES) || 60) * 60_000;
/** The longest a row waits for its outcomes. */
const ROW_MAX_MS = 15 * 60_000;

/** KHRUN_BENCH_FLEET_SIZES ("100,500,1000" by default; quick: 20). */
function sizes(quick: boolean): number[] {
  const text = process.env.KHRUN_BENCH_FLEET_SIZES;
  if (!text) return quick ? [20] : [100, 500, 1000];
  return text.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`KHRUN_BENCH_FLEET_SIZES: "${s}" is not a whole number`);
    return n;
  });
}

/**
 * Rounds at the largest size (KHRUN_BENCH_FLEET_ROUNDS; default 3, quick 1), each running every system
 * once, in turn; smaller sizes run once. One configuration's time spread ±12% between runs on this
 * machine, so a ratio near a goal is read from the rounds' pairs, not from one.
 */
function rounds(quick: boolean): number {
  const text = process.env.KHRUN_BENCH_FLEET_ROUNDS;
  if (!text) return quick ? 1 : 3;
  const n = Number(text.trim());
  if (!Number.isInteger(n) || n < 1 || n > 10)
    throw new Error(`KHRUN_BENCH_FLEET_ROUNDS: "${text}" is not a whole number from 1 to 10`);
  return n;
}

type RowKind = 'khrun' | 'v3' | 'node';
const ROW_KINDS: readonly RowKind[] = ['khrun', 'v3', 'node'];

/**
 * KHRUN_BENCH_FLEET_SYSTEMS ("khrun,v3,node" by default; node: the same pods with no system, the node's
 * floor): a part of them is for exploring, not for the results.
 */
function systems(): RowKind[] {
  const text = process.env.KHRUN_BENCH_FLEET_SYSTEMS;
  if (!text) return [...ROW_KINDS];
  return text.split(',').map((s) => {
    const name = s.trim() as RowKind;
    if (!ROW_KINDS.includes(name))
      throw new Error(`KHRUN_BENCH_FLEET_SYSTEMS: "${name}" is none of ${ROW_KINDS.join(', ')}`);
    return name;
  });
}

/**
 * KHRUN_BENCH_FLEET_PROFILE=1: the spawned tick and every runner write V8 CPU profiles per row into
 * .khrun/bench-prof/ROW/{tick,runners} (read them with test/bench/cpu-profile.ts).
 */
async function profiling(row: string): Promise<Pick<RowContext, 'tickNodeArgs' | 'runnerProfileDir'>> {
  if (process.env.KHRUN_BENCH_FLEET_PROFILE !== '1') return {};
  const dir = join(repoRoot, '.khrun/bench-prof', row);
  await mkdir(join(dir, 'tick'), { recursive: true });
  await mkdir(join(dir, 'runners'), { recursive: true });
  return {
    tickNodeArgs: ['--cpu-prof', '--cpu-prof-dir', join(dir, 'tick')],
    runnerProfileDir: join(dir, 'runners'),
  };
}

export type FleetBesideV3 = Awaited<ReturnType<typeof fleetBesideV3Section>>;

export async function fleetBesideV3Section(ctx: FleetContext) {
  const startMs = Date.now();
  const deadline = startMs + BUDGET_MS;
  const { tickKubeconfig, tickUser } = await deployed(ctx);
  const plan = sizes(ctx.quick);
  await declareNodeRoom(ctx.bench.cluster.kubeConfig, Math.max(...plan) + 500);
  const rowCtx: RowContext = {
    bench: ctx.bench,
    moduleDir: (await kuberhealthyV2Source()).moduleDir,
    dist: ctx.dist,
    v3Binary: await kuberhealthyV3Binary({ cacheDir: ctx.cacheDir, buildDir: join(repoRoot, 'infra/build') }),
    tickKubeconfig,
    tickUser,
    runnerUser: `system:serviceaccount:${DEPLOY_NAMESPACE}:khrun-runner`,
    processes: ctx.processes,
    log: ctx.log,
    runnerNodeArgs: process.env.KHRUN_BENCH_FLEET_RUNNER_FLAGS?.split(' ').filter(Boolean),
  };
  const rows: FleetRow[] = [];
  const node: NodeRow[] = [];
  const notes: string[] = [];
  /** The longest a row of each system took so far, per check (setup and cleanup included). */
  const msPerCheck: Record<string, number> = {};
  const largest = Math.max(...plan);
  const roundsAtLargest = rounds(ctx.quick);
  const roundsOf = (n: number) => (n === largest ? roundsAtLargest : 1);
  for (const n of plan) {
    for (let round = 1; round <= roundsOf(n); round++)
      for (const system of systems()) {
        const left = deadline - Date.now();
        const predicted = (msPerCheck[system] ?? 0) * n;
        if (predicted > left) {
          notes.push(
            `${n} checks under ${system}${roundsOf(n) > 1 ? ` (round ${round})` : ''} left out: at ${fmtMs(msPerCheck[system])} a check (its last row, setup and removal included) it would take about ${Math.round(predicted / 60_000)} min, and ${Math.round(left / 60_000)} min of the section's ${BUDGET_MS / 60_000} were left.`,
          );
          continue;
        }
        ctx.log(
          `  ${n} checks due at once, ${system}${roundsOf(n) > 1 ? ` (round ${round} of ${roundsOf(n)})` : ''}`,
        );
        const t = Date.now();
        // Leave a quarter of what is left for the removal and the rows after.
        const rowMs = Math.min(ROW_MAX_MS, Math.max(60_000, (left * 3) / 4));
        const rowName = round > 1 ? `${system}-${n}-r${round}` : `${system}-${n}`;
        try {
          if (system === 'node') {
            node.push({ ...(await nodeRow(rowCtx, n, rowMs)), round });
          } else {
            const row = {
              ...(system === 'khrun'
                ? await khrunRow({ ...rowCtx, ...(await profiling(rowName)) }, n, rowMs)
                : await v3Row(rowCtx, n, rowMs)),
              round,
            };
            rows.push(row);
            ctx.log(
              `    ${row.recorded}/${n} recorded, ${row.allRecordedMs !== undefined ? `all after ${fmtMs(row.allRecordedMs)}` : `the last after ${fmtMs(row.lastRecordedMs)}`}; ${row.requests.perCheck.toFixed(1)} requests a check; ${row.checkerPods.created} checker pods`,
            );
          }
        } finally {
          const namespaces =
            system === 'node' ? nodeRowNamespaces(n) : fleetRowNamespaces(system, n).map((r) => r.namespace);
          await Promise.all(namespaces.map((namespace) => removeAll(ctx.bench, namespace)));
        }
        msPerCheck[system] = (Date.now() - t) / n;
      }
  }
  return {
    how:
      `For each size, n checks due at once, run by one system alone on the local cluster (the same node, one ` +
      `process kubelet on this machine's cores), first khrun, then Kuberhealthy v3.0.0 (then the node alone, below); each row's checks ` +
      `removed before the next. The check: Kuberhealthy v2.7.1's test-check khcheck from its YAML ` +
      `(REPORT_DELAY ${FLEET_CHECK.reportDelay}: reports at once, with v2.7.1's Go client), runInterval ` +
      `${FLEET_CHECK.runInterval}, timeout ${FLEET_CHECK.timeout}, ${FLEET_CHECKS_PER_NAMESPACE} to a namespace; ` +
      `khrun runs it as that khcheck, v3 as the HealthCheck khrun's converter makes of it (v3 runs only ` +
      `HealthChecks; khrun's tick sends each HealthCheck a runner Job of its own, and batches khchecks). ` +
      `khrun: infra/deploy applied with its admission policies, one \`khrun tick --first-run-jitter 0s\` (the ` +
      `bundle, spawned, as the khrun-tick ServiceAccount, with the batch size and concurrency of infra/deploy's ` +
      `khrun-tick CronJob: ${Object.entries(deployedTickEnv())
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}) over the row's ` +
      `namespaces, its runner Jobs run by the Job controller and the process kubelet; time zero is the tick's ` +
      `spawn. v3: its deploy/kustomize/base Deployment (one replica), built from the Go module proxy, started ` +
      `once the row's HealthChecks exist, on its own schedule (a HealthCheck that never ran is due); time ` +
      `zero is its process's start. Recorded: the check's object first seen with an outcome (khstate's ` +
      `khrun.dev/outcome; HealthCheck's successCount+failureCount) by a watch. Requests (audit log): every ` +
      `request of the system's ServiceAccounts (khrun-tick and khrun-runner; v3's) from time zero until all ` +
      `were recorded (khrun: until its last runner Job ended). Checker pods: creates answered 201 by that ` +
      `identity in the row's namespaces. Peak RSS: v3's VmHWM; the tick's and each runner's maxRSS at exit. ` +
      `Lost: no outcome at the row's end; not OK: the outcome's first error. The node declares room for ` +
      `every pod (as in the scale section). n=1 per row: each size once, the largest (${largest}) in ` +
      `${roundsAtLargest} round${roundsAtLargest > 1 ? 's' : ''}, each running khrun, v3 and the node alone in turn; a ratio pairs the rows of one round.`,
    nodeHow:
      `The node alone, after both systems at each size: the same number of pods of the check's podSpec ` +
      `(restartPolicy Never, no KH_REPORTING_URL, so the checker exits at once, as it would right after its ` +
      `report), created by the admin 32 at a time in namespaces of ${FLEET_CHECKS_PER_NAMESPACE}, no system ` +
      `running; time zero the first create, until a watch saw every pod ended (Succeeded or Failed). Neither ` +
      `system can record a check before its pod ran, so this is the floor under their rows on this node. n=1 a round.`,
    notes,
    rows,
    node,
  };
}
