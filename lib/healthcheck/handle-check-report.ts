import { abortableDelay } from '../core/abort.ts';
import { API_OUTAGE_BACKOFF, Backoff } from '../core/backoff.ts';
import { shortId } from '../core/ids.ts';
import { done, RetriesExhausted, updateWithRetry, write as writeStep } from '../kube/cas.ts';
import { isTransientApiError, loggableError } from '../kube/errors.ts';
import { acceptReport, sameUuid } from '../report/accept-report.ts';
import type { ReportCaller } from '../report/authorize-report.ts';
import { type ReportDeps, reportHoldMs } from '../report/handle-report.ts';
import { parseReportBody, type Report } from '../report/parse-report.ts';
import { readAcceptedReport, readActiveRun } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';

/** The v3 endpoint's dependencies: the v2 report's, plus v3's lookup of a run by its UUID alone. */
export interface CheckReportDeps extends Omit<ReportDeps, 'lookup'> {
  /**
   * The check whose status.currentUUID is uuid (v3's `findCheckByUUID`), among the namespaces served;
   * asked only for a report without a signed run, after the body was found valid.
   */
  findRun(uuid: string): Promise<{ namespace: string; checkName: string } | null>;
}

export interface CheckReportResponse {
  /** v3's codes: 200 stored, 400 refused for good, 410 the run is over (not current, or past its timeout). */
  status: 200 | 400 | 410 | 500;
  message: string;
}

type Verdict = { ok: true; report: Report } | { ok: false; reason: string };

/**
 * v3's rules for a report body (`checkReportHandler`): decoded as v2 decodes it (case-insensitive keys), then
 * `ok: true` with errors is refused (v2 counted it as a failure), `ok: false` needs at least one error, and
 * no error may be empty.
 */
export function gateCheckReport(body: string): Verdict {
  const parsed = parseReportBody(body);
  if (!parsed.ok) return parsed;
  const { OK, Errors } = parsed.report;
  if (OK && Errors.length > 0)
    return {
      ok: false,
      reason: '"ok" is true but "errors" is not empty; report {"ok": true} or {"ok": false, "errors": [...]}',
    };
  if (!OK && Errors.length === 0)
    return { ok: false, reason: '"ok" is false but "errors" is empty; a failing check must say why' };
  const blank = Errors.findIndex((e) => e.length === 0);
  if (blank !== -1)
    return { ok: false, reason: `"errors"[${blank}] is empty; every error must say what went wrong` };
  return { ok: true, report: { OK, Errors } };
}

/**
 * Whether the run may still report, in v3's terms (`IsReportAllowed`): 410 Gone once the run is not the
 * check's current one or its deadline passed; 400 for a second report of the same run (under v3 the first
 * cleared the UUID, so the second names no run). undefined: go on.
 */
export function goneOrRefused(
  state: KhState | null,
  uuid: string,
  nowMs: number,
): { status: 400 | 410; message: string } | undefined {
  if (!state)
    return { status: 400, message: `run uuid ${uuid} is invalid or expired: its check no longer exists` };
  const run = readActiveRun(state);
  if (!run || !sameUuid(run.uuid, uuid))
    return {
      status: 410,
      message: `run ${uuid} is not the current run of its check (it ended, or was replaced)`,
    };
  if (nowMs > run.deadlineMs)
    return {
      status: 410,
      message: `run ${uuid} is past its timeout (${new Date(run.deadlineMs).toISOString()})`,
    };
  const previous = readAcceptedReport(state);
  if (previous && sameUuid(previous.uuid, uuid))
    return { status: 400, message: `run ${uuid} already reported; only the first report counts` };
  return undefined;
}

/**
 * `POST /check` after the URL and headers were authorized and the (bounded) body read: v3's status codes,
 * khrun's report semantics. The body is judged before any API request; a signed run is found without one.
 * The write is the v2 endpoint's (acceptReport into the check's state view, compare-and-swap), and an
 * unreachable API server is waited out within the request as there (v3's client resends an empty body).
 */
export async function handleCheckReport(
  deps: CheckReportDeps,
  req: { caller: ReportCaller; uuid: string; body: string },
): Promise<CheckReportResponse> {
  const gated = gateCheckReport(req.body);
  if (!gated.ok) return refuse(deps, 400, `report rejected: ${gated.reason}`);
  const arrivedMs = deps.clock.nowMs();
  // A signed run waited for in this process records its outcome from the report in one write (as on v2's
  // route, handle-report.ts); declined or absent, the report is stored in the state view as any other.
  if (req.caller.via === 'signed' && deps.deliver) {
    const { run } = req.caller;
    const report = { ok: gated.report.OK, errors: gated.report.Errors, atMs: arrivedMs };
    if ((await deps.deliver(run, report)) === 'recorded') {
      deps.log.info('report accepted', {
        check: `${run.namespace}/${run.checkName}`,
        run: shortId(run.uuid),
        ok: report.ok,
        path: '/check',
        recordedAsOutcome: true,
      });
      return { status: 200, message: 'report accepted' };
    }
  }
  const holdUntilMs = arrivedMs + reportHoldMs(req.caller, arrivedMs, deps);
  const delay = deps.delay ?? ((ms: number) => abortableDelay(ms));
  const backoff = new Backoff(API_OUTAGE_BACKOFF);
  for (;;) {
    try {
      return await store(deps, req, gated.report, arrivedMs);
    } catch (error) {
      if (!isTransientApiError(error)) throw error;
      const waitMs = backoff.next();
      const remainingMs = holdUntilMs - deps.clock.nowMs();
      if (remainingMs <= 0) {
        deps.log.error('report could not be stored: API server unavailable', { error: loggableError(error) });
        return {
          status: 500,
          message: 'the report could not be stored: the API server is unavailable; retry',
        };
      }
      deps.log.warn('API server unavailable; the report waits for it', { error: loggableError(error) });
      await delay(Math.min(waitMs, remainingMs));
    }
  }
}

async function store(
  deps: CheckReportDeps,
  req: { caller: ReportCaller; uuid: string },
  report: Report,
  arrivedMs: number,
): Promise<CheckReportResponse> {
  const ref = req.caller.via === 'signed' ? req.caller.run : await deps.findRun(req.uuid);
  if (!ref) return refuse(deps, 400, `run uuid ${req.uuid} is invalid or expired`);
  const checkRef = `${ref.namespace}/${ref.checkName}`;
  const attempts = deps.maxWriteAttempts ?? 8;
  try {
    return await updateWithRetry<KhState, CheckReportResponse>({
      writer: 'report',
      target: checkRef,
      maxAttempts: attempts,
      log: deps.log,
      read: () => deps.state.read(ref.namespace, ref.checkName),
      decide: (state) => {
        // The same report already stored (a write whose answer was lost, or a client's resend): nothing to do.
        const stored = readAcceptedReport(state);
        if (stored && sameUuid(stored.uuid, req.uuid) && sameReport(stored, report))
          return done({ status: 200, message: 'report accepted (already stored)' } as const);
        const gone = goneOrRefused(state, req.uuid, arrivedMs);
        if (gone) return done(refuse(deps, gone.status, gone.message, { check: checkRef }));
        const decision = acceptReport({
          state,
          checkRef,
          uuid: req.uuid,
          report,
          pod: undefined,
          server: deps.server,
          nowMs: arrivedMs,
        });
        if (!decision.ok)
          return done(refuse(deps, 400, `report rejected: ${decision.reason}`, { check: checkRef }));
        return writeStep(decision.next, () => {
          deps.log.info('report accepted', {
            check: checkRef,
            run: shortId(req.uuid),
            ok: report.OK,
            path: '/check',
          });
          return { status: 200, message: 'report accepted' } as const;
        });
      },
      persist: (next) => deps.state.replace(next, 'report'),
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
    deps.log.error('report write kept conflicting', { check: checkRef, attempts });
    return {
      status: 500,
      message: `the report could not be stored after ${attempts} conflicting writes; retry`,
    };
  }
}

const sameReport = (a: { ok: boolean; errors: string[] }, b: Report) =>
  a.ok === b.OK && JSON.stringify(a.errors) === JSON.stringify(b.Errors);

function refuse(
  deps: CheckReportDeps,
  status: 400 | 410,
  message: string,
  extra: Record<string, unknown> = {},
): CheckReportResponse {
  deps.log.warn('report rejected', { status, reason: message, ...extra });
  return { status, message };
}
