import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { KindName, RunTarget } from '../core/run-target.ts';
import type { JobRunResult } from '../job/run-khjob.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { KubePort } from '../kube/port.ts';
import type { SharedReads } from '../kube/shared-reads.ts';
import type { ReportAccess } from '../report/authorize-report.ts';
import type { ReportDeps } from '../report/handle-report.ts';
import type { ReportingUrl, ReportKey } from '../report/report-token.ts';
import type { Route } from '../report/routes.ts';
import type { AcquireDeps } from '../run/acquire-deps.ts';
import type { RunTimings } from '../run/assess.ts';
import type { EventSink } from '../run/events.ts';
import type { IterationResult } from '../run/iteration.ts';

/** What one run of any kind returns: the engine's result, or (a khjob) nothing to do, it already ran. */
export type RunResult = JobRunResult;

/** One object's run inside a session (lib/session/session.ts). */
export interface TargetRun {
  target: RunTarget;
  /** Cancels this run's wait (the invocation's signal, or one of its own): the run stays resumable. */
  signal: AbortSignal;
  timings?: RunTimings;
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
  /** Writes this run's log lines through (for instance a child logger naming the check). */
  log?: Log;
}

/**
 * What a session hands one run of a kind: its client, the kind's ports (made once per session), and the
 * engine wired to the session's endpoint and settings, reporting to the kind's URL.
 */
export interface SessionKit<P extends KindPorts = KindPorts> {
  /** Who runs: becomes the runs' AuthoritativePod. */
  readonly runner: string;
  readonly ports: P;
  /** The engine's ports for run: the kind's kube and events, the session's clock, ids and probe, run's log. */
  deps(run: TargetRun): AcquireDeps;
  /** One iteration of the engine over deps, its checker pod reporting to the kind's URL. */
  iterate(deps: AcquireDeps, run: TargetRun): Promise<IterationResult>;
}

/** What a kind's own report route is given on a session's hosted endpoint. */
export interface RouteContext {
  access: ReportAccess;
  clock: Clock;
  log: Log;
  /** Written as a report's AuthoritativePod. */
  server: string;
  maxBodyBytes: number;
  /** Hands a signed run's report to that run when this session waits for it (lib/run/report-inbox.ts). */
  deliver?: ReportDeps['deliver'];
}

/** A kind's session-wide parts: made once per session on its client, shared by its runs and its route. */
export interface KindPorts {
  /** The engine's port: the kind's object read as a khcheck, its state as a khstate. */
  kube: KubePort;
  /** Announces each recorded outcome on the kind's object. */
  events: EventSink;
  /** A report route of the kind's own (v3's POST /check) beside v2's /externalCheckStatus. */
  route?(ctx: RouteContext): Route;
}

/**
 * One kind of object khrun runs, as the session and the front ends see it (controller-runtime's
 * `AsReconciler`): everything that differs between khchecks, khjobs and HealthChecks when one is run. The
 * registry (registry.ts) holds the three; a front end looks the kind up once, from its RunTarget.
 */
export interface Kind<P extends KindPorts = KindPorts> {
  readonly name: KindName;
  /** How people name one: `khcheck`, `khjob`, `HealthCheck`. */
  readonly noun: string;
  /**
   * Every request a run of this kind makes goes through these ports (tests hand in fakes). shared: the
   * reads a batch's runs make together (kube/shared-reads.ts), for a kind that runs in batches.
   */
  ports(client: KubeClient, shared?: SharedReads): P;
  /** The URL its checker pods report to, from an endpoint's report URL and the key that signs each run's. */
  reportingUrl(base: string, key: ReportKey | undefined): ReportingUrl;
  /** One run of run.target in the session; a missing object throws the kind's NotFoundError. */
  run(kit: SessionKit<P>, run: TargetRun): Promise<RunResult>;
}
