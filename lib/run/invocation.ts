import type { KubeConfig } from '@kubernetes/client-node';
import type { Log } from '../core/log.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import type { RunTimings } from './assess.ts';
import type { IterationResult } from './iteration.ts';
import { openRunnerSession, type ReportHosting, sessionSettings } from './runner-session.ts';

export type { ReportHosting } from './runner-session.ts';

export interface RunCheckOptions {
  kc: KubeConfig;
  /** The client object to send through; default the session's own (runner-session.ts). */
  client?: KubeClient;
  namespace: string;
  checkName: string;
  runner: string;
  report: ReportHosting;
  signal: AbortSignal;
  log: Log;
  timings?: RunTimings;
  leaseMs?: number;
  keepFinishedPods?: number;
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
  /**
   * Run even a check a Kuberhealthy runs (KHRUN_TAKE_OVER); else such a run is refused from the khstate the
   * claim reads (lib/takeover's guard), for `khrun run`, `khrun serve`'s triggered runs and the Lambda alike.
   */
  takeOver?: boolean;
  /** Changes the engine's ports before the iteration: a khjob runs through its own (lib/job/job-port.ts). */
  adapt?: (deps: AcquireDeps) => AcquireDeps;
}

/**
 * One invocation of the runner for one check: a session of one (runner-session.ts) that hosts the report
 * endpoint for the run's duration (unless an external one is configured), performs the iteration, and stops
 * everything it started.
 */
export async function runCheck(opts: RunCheckOptions): Promise<IterationResult> {
  const session = await openRunnerSession({ ...sessionSettings(opts), namespaces: [opts.namespace] });
  try {
    return await session.run({
      namespace: opts.namespace,
      checkName: opts.checkName,
      signal: opts.signal,
      timings: opts.timings,
      onPhase: opts.onPhase,
      adapt: opts.adapt,
    });
  } finally {
    await session.close();
  }
}
