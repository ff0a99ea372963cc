import { setTimeout as delay } from 'node:timers/promises';
import { CHECK_KINDS, type CheckKind } from './kh-checks.ts';
import type { CheckSet } from './kh-phase.ts';
import type { SeenRun } from './kh-run-watch.ts';
import { pidOf, sampleRss } from './proc-rss.ts';

/** A Kuberhealthy that runs checks by itself: started, measured, stopped. */
export interface Daemon {
  binary: string;
  /** Starts it in its own namespace; the username its requests carry (its ServiceAccount's), and how to stop it. */
  start(): Promise<{ user: string; stop(): Promise<void> }>;
}

export interface DaemonPhase {
  user: string;
  runs: Record<CheckKind, SeenRun[]>;
  /** From the daemon's start to the last run measured (this process's clock, the API server's machine). */
  runsFromMs: number;
  runsToMs: number;
  /** A window with no check due: only the instant checks left, on runInterval 1h, their last run done. */
  restFromMs: number;
  restToMs: number;
  /** VmRSS of the daemon's process every 2 s over the phase, and its VmHWM at the end. */
  memory: { samplesMiB: number[]; peakMiB: number };
}

/**
 * Runs a daemon on a check set until every kind has `targets[kind]` runs with an outcome and one more
 * started (the next start bounds the last run's requests), then leaves no check due and counts a rest
 * window. The waits are on watched runs, with a deadline; the rest window and the settling before it are
 * timed, as they are what is measured.
 */
export async function runDaemonPhase(opts: {
  daemon: Daemon;
  checks: CheckSet;
  targets: Record<CheckKind, number>;
  timeoutMs: number;
  restMs: number;
  /** How long the check objects must have stayed unchanged before the rest window starts. */
  quietMs: number;
  log: (line: string) => void;
}): Promise<DaemonPhase> {
  const { checks, targets } = opts;
  const started = await opts.daemon.start();
  try {
    const pid = await pidOf(opts.daemon.binary);
    if (!pid) throw new Error(`no process of ${opts.daemon.binary} runs, though its pod does`);
    const rss = sampleRss(pid, 2_000);
    const runsFromMs = Date.now();
    const enough = (kind: CheckKind) =>
      checks.done(kind) >= targets[kind] &&
      checks.watch.runs(checks.namespaces[kind]).length >= targets[kind] + 1;
    const progress = setInterval(
      () =>
        opts.log(
          `    runs done: ${CHECK_KINDS.map((k) => `${k} ${checks.done(k)}/${targets[k]}`).join(', ')}`,
        ),
      30_000,
    );
    try {
      await checks.watch.until(
        () => CHECK_KINDS.every(enough),
        opts.timeoutMs,
        `${CHECK_KINDS.map((k) => `${targets[k]} runs of ${k}`).join(', ')}`,
      );
    } finally {
      clearInterval(progress);
    }
    const runsToMs = Date.now();
    const runs = {} as Record<CheckKind, SeenRun[]>;
    for (const kind of CHECK_KINDS) runs[kind] = checks.watch.runs(checks.namespaces[kind]);

    opts.log(`    at rest: ${opts.restMs / 1000} s with no check due`);
    await checks.quiesce();
    // A changed khcheck restarts v2's checks (each runs once more, and stores its state again when its pod
    // has exited): the window starts once the checks' objects have been left alone for a while.
    await delay(5_000);
    await checks.watch.quiet(opts.quietMs, 180_000);
    const restFromMs = Date.now();
    await delay(opts.restMs);
    const restToMs = Date.now();
    const memory = await rss.stop();
    return { user: started.user, runs, runsFromMs, runsToMs, restFromMs, restToMs, memory };
  } finally {
    await started.stop();
  }
}
