import type { NamespaceScope } from '../kube/scope.ts';
import { type ReportKey, type ReportPath, type RunRef, verifyRun } from './report-token.ts';

/**
 * What an endpoint does with a report sent to the bare report path (no signed run in the URL), as v2's
 * clients send to a v2-style KH_REPORTING_URL:
 * - `refuse`: nothing but signed URLs (no API request is ever made for an unsigned one);
 * - `header`: identify by the kh-run-uuid header (one pod LIST per request);
 * - `header-and-ip`: also by source address when the header is missing or names no pod (v2's fallback;
 *   only where pods reach the endpoint with their own IPs, never behind NAT).
 */
export const UNSIGNED_POLICIES = ['refuse', 'header', 'header-and-ip'] as const;
export type UnsignedPolicy = (typeof UNSIGNED_POLICIES)[number];

export interface ReportAccess {
  /** Checks signed URLs; undefined: none configured, so a signed URL cannot be checked and is refused. */
  key: ReportKey | undefined;
  unsigned: UnsignedPolicy;
  /** The namespaces served; a signed run of another namespace is refused without a request. */
  scope: NamespaceScope;
}

/** Who the caller claims to be, once the URL allows it; the body has not been read yet. */
export type ReportCaller =
  | { via: 'signed'; run: RunRef }
  | { via: 'unsigned'; headerUuid: string | undefined; sourceIp: string | undefined };

export type Authorization = { ok: true; caller: ReportCaller } | { ok: false; reason: string };

const SEND_AS_IS = "POST to the checker pod's KH_REPORTING_URL unchanged";

/**
 * Whether a request may go on to have its body read and its run looked up, decided from the URL and
 * headers alone: pure, no I/O. Every refusal here costs the API server nothing.
 */
export function authorizeReport(
  access: ReportAccess,
  path: ReportPath,
  request: { headerUuid: string | undefined; sourceIp: string | undefined; nowMs: number },
): Authorization {
  if (path.kind === 'malformed') return { ok: false, reason: path.reason };
  if (!access.key && access.unsigned === 'refuse') {
    return {
      ok: false,
      reason:
        'this server takes no reports (`khrun serve --no-reports`: status and metrics only); checker pods ' +
        "report to their runner, or to a server that has the runners' report key",
    };
  }
  if (path.kind === 'signed') {
    const { run } = path;
    if (!access.key) {
      return {
        ok: false,
        reason:
          'this endpoint has no report key (KHRUN_REPORT_KEY), so it cannot check a signed reporting URL; ' +
          'configure the same key here as on the runners that handed the URL out',
      };
    }
    if (access.scope !== 'all' && !access.scope.namespaces.includes(run.namespace)) {
      return { ok: false, reason: `namespace ${run.namespace} is not served by this endpoint` };
    }
    if (!verifyRun(access.key, run, path.mac)) {
      return {
        ok: false,
        reason: `the token in the reporting URL is not valid for run ${run.uuid} of ${run.namespace}/${run.checkName} (altered, or signed by another runner or deployment); ${SEND_AS_IS}`,
      };
    }
    if (request.headerUuid && request.headerUuid !== run.uuid) {
      return { ok: false, reason: 'the kh-run-uuid header names another run than the reporting URL' };
    }
    // The run's own deadline, judged as acceptReport judges it, only earlier: a finished run's URL
    // replayed later costs nothing.
    if (request.nowMs > run.deadlineMs) {
      return {
        ok: false,
        reason: `the report arrived after the run's deadline ${new Date(run.deadlineMs).toISOString()}`,
      };
    }
    return { ok: true, caller: { via: 'signed', run } };
  }
  if (access.unsigned === 'refuse') {
    return {
      ok: false,
      reason: `this endpoint takes reports only at the signed URL khrun gives each checker pod; ${SEND_AS_IS}${
        access.key
          ? ' (to also accept v2-style reports by kh-run-uuid header, set KHRUN_REPORT_UNSIGNED=header)'
          : ''
      }`,
    };
  }
  if (access.unsigned === 'header') {
    if (!request.headerUuid) {
      return {
        ok: false,
        reason: `no kh-run-uuid header; send kh-run-uuid: $KH_RUN_UUID (this endpoint does not identify pods by source address), or ${SEND_AS_IS}`,
      };
    }
    return { ok: true, caller: { via: 'unsigned', headerUuid: request.headerUuid, sourceIp: undefined } };
  }
  return {
    ok: true,
    caller: { via: 'unsigned', headerUuid: request.headerUuid, sourceIp: request.sourceIp },
  };
}
