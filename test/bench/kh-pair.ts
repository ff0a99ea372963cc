import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import type { KubeConfig, V1PodTemplateSpec } from '@kubernetes/client-node';
import type { BenchCluster } from './bench-cluster.ts';
import { CHECK_KINDS, type CheckKind, checkName } from './kh-checks.ts';
import { benchRunnerPods, type Fire, fireOnInterval } from './kh-fire.ts';
import type { CheckSet } from './kh-phase.ts';
import { type SeenRun, untilAny } from './kh-run-watch.ts';
import { pidOf, sampleRss } from './proc-rss.ts';

/** A Kuberhealthy that runs every check of its kind in the cluster by itself: started, then stopped. */
export interface Peer {
  /** Its program (the process kubelet runs the pod's container as this local program). */
  binary: string;
  /** Starts it in its own namespace; the username its requests carry (its ServiceAccount's) and how to stop it. */
  start(): Promise<{ user: string; stop(): Promise<void> }>;
}

const loads = () => loadavg().map((x) => Math.round(x * 100) / 100);

/** What one pair measured, raw: each actor's runs as the one watcher saw them, khrun's fires, the window. */
export interface PairRun {
  peer: {
    user: string;
    runs: Record<CheckKind, SeenRun[]>;
    /** VmRSS of its process every 2 s, and its VmHWM at the end. */
    memory: { samplesMiB: number[]; peakMiB: number };
  };
  khrun: {
    runs: Record<CheckKind, SeenRun[]>;
    fires: Record<CheckKind, number[]>;
    /** Fires skipped because the check's last Job was still active (concurrencyPolicy Forbid). */
    skipped: number;
    /** Each runner process's peak RSS (its maxRSS at exit, from its log). */
    runnerPeakRssMiB: number[];
  };
  startMs: number;
  /** From the first outcome of every check of both actors (start-up left out) to the last target met. */
  windowFromMs: number;
  windowToMs: number;
  /** Whether every check reached its target before the deadline (else the figures hold fewer runs). */
  complete: boolean;
  loadAverage: { before: number[]; after: number[] };
}

const runsOf = (set: CheckSet) =>
  Object.fromEntries(CHECK_KINDS.map((k) => [k, set.watch.runs(set.namespaces[k])])) as Record<
    CheckKind,
    SeenRun[]
  >;

/**
 * A peer and khrun at the same time on the same cluster, the same check programs and specs, each on its own
 * namespaces: the peer on its own schedule, khrun's runner Jobs fired on the same interval (each check at
 * its own offset in the interval, as CronJobs of different checks are). Both read by the same watcher
 * code. Runs until every check of both has `targets[kind] + 1` outcomes (the first is start-up), or the
 * deadline; then stops firing, lets khrun's last Jobs end, and stops the peer.
 */
export async function runPair(opts: {
  bench: BenchCluster;
  peer: Peer;
  peerChecks: CheckSet;
  khrunChecks: CheckSet;
  template: V1PodTemplateSpec;
  jobNamespace: string;
  intervalMs: number;
  targets: Record<CheckKind, number>;
  deadlineMs: number;
  log: (line: string) => void;
}): Promise<PairRun> {
  const kc: KubeConfig = opts.bench.cluster.kubeConfig;
  const { peerChecks, khrunChecks, targets } = opts;
  const before = loads();
  const started = await opts.peer.start();
  const startMs = Date.now();
  let fire: ReturnType<typeof fireOnInterval> | undefined;
  try {
    const pid = await pidOf(opts.peer.binary);
    if (!pid) throw new Error(`no process of ${opts.peer.binary} runs, though its pod does`);
    const rss = sampleRss(pid, 2_000);
    fire = fireOnInterval({
      kc,
      template: opts.template,
      checks: CHECK_KINDS.map((kind, i) => ({
        namespace: khrunChecks.namespaces[kind],
        name: checkName(kind),
        kind: khrunChecks.record === 'khstate' ? 'khcheck' : 'healthcheck',
        timeoutMs: khrunChecks.timeoutMs[kind],
        offsetMs: Math.round((i * opts.intervalMs) / CHECK_KINDS.length),
      })),
      intervalMs: opts.intervalMs,
      startMs,
      jobNamespace: opts.jobNamespace,
      log: opts.log,
    });
    const both = [peerChecks, khrunChecks];
    const firstDone = () => both.every((s) => CHECK_KINDS.every((k) => s.done(k) >= 1));
    const enough = () => both.every((s) => CHECK_KINDS.every((k) => s.done(k) >= targets[k] + 1));
    const progress = setInterval(
      () =>
        opts.log(
          `    outcomes (peer | khrun): ${CHECK_KINDS.map((k) => `${k} ${peerChecks.done(k)} | ${khrunChecks.done(k)}`).join(', ')} of ${CHECK_KINDS.map((k) => targets[k] + 1).join('/')}`,
        ),
      30_000,
    );
    let windowFromMs = startMs;
    let complete = true;
    try {
      const deadline = startMs + opts.deadlineMs;
      const watches = both.map((s) => s.watch);
      await untilAny(watches, firstDone, opts.deadlineMs, 'a first outcome of every check');
      windowFromMs = Date.now();
      await untilAny(watches, enough, Math.max(1, deadline - Date.now()), 'the runs every check needs');
    } catch (error) {
      complete = false;
      opts.log(`    ${(error as Error).message}: the pair ends with the runs it has`);
    } finally {
      clearInterval(progress);
    }
    const windowToMs = Date.now();
    await fire.stop(120_000);
    const memory = await rss.stop();
    const after = loads();
    const fires = Object.fromEntries(CHECK_KINDS.map((k) => [k, [] as number[]])) as Record<
      CheckKind,
      number[]
    >;
    for (const f of fire.fires() as Fire[]) {
      const kind = CHECK_KINDS.find((k) => f.check === `${khrunChecks.namespaces[k]}/${checkName(k)}`);
      if (kind) fires[kind].push(f.atMs);
    }
    const runnerPeakRssMiB: number[] = [];
    for (const pod of await benchRunnerPods(kc, opts.jobNamespace)) {
      const path = opts.bench.cluster.kubelet.podLogPath(opts.jobNamespace, pod, 'runner');
      const text = path ? await readFile(path, 'utf8').catch(() => '') : '';
      const kb = Number(/KHRUN_BENCH_MAXRSS_KB (\d+)/.exec(text)?.[1]);
      if (Number.isFinite(kb)) runnerPeakRssMiB.push(kb / 1024);
    }
    return {
      peer: { user: started.user, runs: runsOf(peerChecks), memory },
      khrun: {
        runs: runsOf(khrunChecks),
        fires,
        skipped: Object.values(fire.skipped()).reduce((a, b) => a + b, 0),
        runnerPeakRssMiB,
      },
      startMs,
      windowFromMs,
      windowToMs,
      complete,
      loadAverage: { before, after },
    };
  } finally {
    await fire?.stop(0);
    await started.stop();
  }
}
