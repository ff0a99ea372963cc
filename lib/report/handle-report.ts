import type { KhState } from '../check/types.ts';
import { shortId } from '../run/acquire.ts';
import type { Clock, Log } from '../run/ports.ts';
import { WriteConflict } from '../run/ports.ts';
import { acceptReport } from './accept-report.ts';
import { type CallerLookup, identifyCaller } from './identify-caller.ts';
import { gateReport, parseReportBody } from './parse-report.ts';

export interface ReportDeps {
  lookup: CallerLookup;
  state: {
    read(namespace: string, name: string): Promise<KhState | null>;
    /** resourceVersion-preconditioned; throws WriteConflict on 409. */
    replace(state: KhState): Promise<KhState>;
  };
  clock: Clock;
  log: Log;
  /** Identity written to AuthoritativePod. */
  server: string;
  maxWriteAttempts?: number;
}

export interface ReportRequest {
  method: string;
  headerUuid: string | undefined;
  sourceIp: string | undefined;
  body: string;
}

export interface ReportResponse {
  status: 200 | 400 | 500;
  message: string;
}

/**
 * The report protocol of Kuberhealthy v2: 200 accepted, 400 for every rejection (Go clients from v2.5 on
 * treat 400 as final), 500 when the state could not be written (clients retry). The body is checked before
 * any API call, so malformed floods cost the API server nothing.
 */
export async function handleReport(deps: ReportDeps, req: ReportRequest): Promise<ReportResponse> {
  if (req.method === 'GET' && req.body.length === 0) {
    return { status: 200, message: 'khrun report endpoint: POST {"OK": true|false, "Errors": [...]} here' };
  }
  const parsed = parseReportBody(req.body);
  if (!parsed.ok) return reject(deps, parsed.reason);
  const gated = gateReport(parsed.report);
  if (!gated.ok) return reject(deps, gated.reason);

  const caller = await identifyCaller(deps.lookup, req.headerUuid, req.sourceIp);
  if (!caller.ok) return reject(deps, caller.reason);
  const checkRef = `${caller.namespace}/${caller.checkName}`;

  const attempts = deps.maxWriteAttempts ?? 8;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const state = await deps.state.read(caller.namespace, caller.checkName);
    const decision = acceptReport({
      state,
      checkRef,
      uuid: caller.uuid,
      report: gated.report,
      pod: caller.pod,
      server: deps.server,
      nowMs: deps.clock.nowMs(),
    });
    if (!decision.ok) return reject(deps, decision.reason, { check: checkRef, pod: caller.pod });
    try {
      await deps.state.replace(decision.next);
      deps.log.info('report accepted', {
        check: checkRef,
        run: shortId(caller.uuid),
        pod: caller.pod,
        ok: gated.report.OK,
        attempt,
      });
      return { status: 200, message: 'report accepted' };
    } catch (error) {
      if (!(error instanceof WriteConflict)) {
        deps.log.error('report could not be written', { check: checkRef, error: String(error) });
        return { status: 500, message: 'the report could not be stored; retry' };
      }
    }
  }
  deps.log.error('report write kept conflicting', { check: checkRef, attempts });
  return {
    status: 500,
    message: `the report could not be stored after ${attempts} conflicting writes; retry`,
  };
}

function reject(deps: ReportDeps, reason: string, extra: Record<string, unknown> = {}): ReportResponse {
  deps.log.warn('report rejected', { reason, ...extra });
  return { status: 400, message: `report rejected: ${reason}` };
}
