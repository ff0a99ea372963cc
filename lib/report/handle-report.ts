import { abortableDelay } from '../core/abort.ts';
import { API_OUTAGE_BACKOFF, Backoff } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import { shortId } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { done, RetriesExhausted, updateWithRetry, write as writeStep } from '../kube/cas.ts';
import { isTransientApiError, loggableError } from '../kube/errors.ts';
import { readAcceptedReport } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { acceptReport } from './accept-report.ts';
import type { ReportCaller } from './authorize-report.ts';
import { type Caller, type CallerLookup, identifyCaller } from './identify-caller.ts';
import { gateReport, parseReportBody, type Report } from './parse-report.ts';
import type { RunRef } from './report-token.ts';

export interface ReportDeps {
  lookup: CallerLookup;
  state: {
    read(namespace: string, name: string): Promise<KhState | null>;
    /** resourceVersion-preconditioned; throws WriteConflict on 409. writer names the loop (user agent). */
    replace(state: KhState, writer?: string): Promise<KhState>;
  };
  clock: Clock;
  log: Log;
  /** Identity written to AuthoritativePod. */
  server: string;
  maxWriteAttempts?: number;
  /**
   * How long a report waits at least for an unreachable API server before the answer is 500 (default 15 s).
   * A report on a signed URL waits longer, until its run's deadline: see reportHoldMs.
   */
  apiRetryMs?: number;
  /**
   * The most a report is held waiting for the API server, whatever its run's deadline (default 10 min); the
   * report Lambda passes its remaining time, so it answers 500 before it is cut off.
   */
  maxHoldMs?: number;
  /** Waits between those tries; injected by tests (default: a timer). */
  delay?: (ms: number) => Promise<void>;
  /**
   * Hands a signed run's report to that run when this process waits for it (a runner's own endpoint, see
   * lib/run/report-inbox.ts): 'recorded' means the run's outcome was written from it, and the answer is 200;
   * 'declined' or 'absent' stores it in the khstate as any other report.
   */
  deliver?: (
    run: RunRef,
    report: { ok: boolean; errors: string[]; atMs: number },
  ) => Promise<'recorded' | 'declined' | 'absent'>;
}

export const DEFAULT_API_RETRY_MS = 15_000;
export const DEFAULT_MAX_HOLD_MS = 10 * 60_000;

/**
 * How long a report that arrived at arrivedMs is held while the API server cannot be reached. v2's clients
 * wait on the request without a timeout, and a 500 loses the report (the npm client does not retry; the Go
 * checkclient resends an empty body), so a report on a signed URL is held until its run's deadline (the run
 * cannot be judged before then anyway), at least apiRetryMs, at most maxHoldMs.
 */
export function reportHoldMs(
  caller: ReportCaller,
  arrivedMs: number,
  opts: { apiRetryMs?: number; maxHoldMs?: number },
): number {
  const floorMs = opts.apiRetryMs ?? DEFAULT_API_RETRY_MS;
  const untilDeadlineMs = caller.via === 'signed' ? caller.run.deadlineMs - arrivedMs : 0;
  return Math.max(0, Math.min(opts.maxHoldMs ?? DEFAULT_MAX_HOLD_MS, Math.max(floorMs, untilDeadlineMs)));
}

export interface ReportRequest {
  method: string;
  /** Who the URL and headers say is calling, as authorizeReport let it through. */
  caller: ReportCaller;
  body: string;
}

export interface ReportResponse {
  status: 200 | 400 | 500;
  message: string;
}

/**
 * The report protocol of Kuberhealthy v2: 200 accepted, 400 for every rejection (Go clients from v2.5 on
 * treat 400 as final), 500 when the state could not be written (clients retry). The URL was authorized
 * (authorizeReport) and the body is checked before any API call, so floods cost the API server nothing; a
 * signed URL names its run, so a genuine report costs one read and one write of the khstate, no pod LIST;
 * none at all when the run is waited for in this process (deps.deliver), which records it as the outcome.
 */
export async function handleReport(deps: ReportDeps, req: ReportRequest): Promise<ReportResponse> {
  if (req.method === 'GET' && req.body.length === 0) {
    return { status: 200, message: 'khrun report endpoint: POST {"OK": true|false, "Errors": [...]} here' };
  }
  const parsed = parseReportBody(req.body);
  if (!parsed.ok) return reject(deps, parsed.reason);
  const gated = gateReport(parsed.report);
  if (!gated.ok) return reject(deps, gated.reason);

  // An API server that cannot be reached is waited for, within the request: the common clients never get
  // a report through a retry (the npm client does not retry; v2's Go checkclient resends an empty body),
  // so answering 500 would turn an outage into a check that "exited without reporting" (reportHoldMs).
  // Judged (deadline) and stamped as of its arrival: waiting for the API must not make a report late.
  const arrivedMs = deps.clock.nowMs();
  if (req.caller.via === 'signed' && deps.deliver) {
    const report = { ok: gated.report.OK, errors: gated.report.Errors, atMs: arrivedMs };
    const { run } = req.caller;
    if ((await deps.deliver(run, report)) === 'recorded') {
      deps.log.info('report accepted', {
        check: `${run.namespace}/${run.checkName}`,
        run: shortId(run.uuid),
        ok: report.ok,
        recordedAsOutcome: true,
      });
      return { status: 200, message: 'report accepted' };
    }
  }
  const deadlineMs = arrivedMs + reportHoldMs(req.caller, arrivedMs, deps);
  const delay = deps.delay ?? ((ms: number) => abortableDelay(ms));
  const write = { uncertain: false };
  const backoff = new Backoff(API_OUTAGE_BACKOFF);
  for (;;) {
    try {
      return await identifyAndStore(deps, req, gated.report, arrivedMs, write);
    } catch (error) {
      if (!isTransientApiError(error)) throw error;
      const waitMs = backoff.next();
      const remainingMs = deadlineMs - deps.clock.nowMs();
      if (remainingMs <= 0) {
        deps.log.error('report could not be stored: API server unavailable', { error: loggableError(error) });
        return {
          status: 500,
          message: 'the report could not be stored: the API server is unavailable; retry',
        };
      }
      deps.log.warn('API server unavailable; the report waits for it', {
        error: loggableError(error),
        retryInMs: Math.min(waitMs, remainingMs),
      });
      await delay(Math.min(waitMs, remainingMs));
    }
  }
}

/**
 * Identifies the caller and stores its report (bounded retries on write conflicts). Throws the API
 * server's transient failures for handleReport to wait out; `write.uncertain` is set when a write failed
 * that way, because it may have landed all the same.
 */
async function identifyAndStore(
  deps: ReportDeps,
  req: ReportRequest,
  report: Report,
  arrivedMs: number,
  write: { uncertain: boolean },
): Promise<ReportResponse> {
  const caller = await callerOf(deps.lookup, req.caller);
  if (!caller.ok) return reject(deps, caller.reason);
  const checkRef = `${caller.namespace}/${caller.checkName}`;

  const attempts = deps.maxWriteAttempts ?? 8;
  try {
    return await updateWithRetry<KhState, ReportResponse>({
      writer: 'report',
      target: checkRef,
      maxAttempts: attempts,
      log: deps.log,
      read: () => deps.state.read(caller.namespace, caller.checkName),
      decide: (state, attempt) => {
        if (write.uncertain && isStored(state, caller.uuid, report))
          return done(accepted(deps, checkRef, caller, report));
        const decision = acceptReport({
          state,
          checkRef,
          uuid: caller.uuid,
          report,
          pod: caller.pod,
          server: deps.server,
          nowMs: arrivedMs,
        });
        if (!decision.ok) return done(reject(deps, decision.reason, { check: checkRef, pod: caller.pod }));
        return writeStep(decision.next, () => accepted(deps, checkRef, caller, report, attempt));
      },
      persist: async (next) => {
        try {
          return await deps.state.replace(next, 'report');
        } catch (error) {
          // A write that failed this way may have landed all the same: the next try looks before writing.
          if (isTransientApiError(error)) write.uncertain = true;
          throw error;
        }
      },
    });
  } catch (error) {
    if (error instanceof RetriesExhausted) {
      deps.log.error('report write kept conflicting', { check: checkRef, attempts });
      return {
        status: 500,
        message: `the report could not be stored after ${attempts} conflicting writes; retry`,
      };
    }
    if (isTransientApiError(error)) throw error;
    deps.log.error('report could not be written', { check: checkRef, error: loggableError(error) });
    return { status: 500, message: 'the report could not be stored; retry' };
  }
}

async function callerOf(lookup: CallerLookup, caller: ReportCaller): Promise<Caller> {
  if (caller.via === 'signed') return { ok: true, ...caller.run, pod: undefined };
  return identifyCaller(lookup, caller.headerUuid, caller.sourceIp);
}

/** Whether the khstate already holds exactly this report for this run (a write whose answer was lost). */
function isStored(state: KhState | null, uuid: string, report: Report): boolean {
  const stored = readAcceptedReport(state);
  return (
    stored?.uuid === uuid &&
    stored.ok === report.OK &&
    JSON.stringify(stored.errors) === JSON.stringify(report.Errors)
  );
}

function accepted(
  deps: ReportDeps,
  checkRef: string,
  caller: { uuid: string; pod: string | undefined },
  report: Report,
  attempt?: number,
): ReportResponse {
  deps.log.info('report accepted', {
    check: checkRef,
    run: shortId(caller.uuid),
    pod: caller.pod,
    ok: report.OK,
    ...(attempt === undefined ? { afterOutage: true } : { attempt }),
  });
  return { status: 200, message: 'report accepted' };
}

function reject(deps: ReportDeps, reason: string, extra: Record<string, unknown> = {}): ReportResponse {
  deps.log.warn('report rejected', { reason, ...extra });
  return { status: 400, message: `report rejected: ${reason}` };
}
