import { timingSafeEqual } from 'node:crypto';
import { type AcceptedReport, readAcceptedReport, readActiveRun } from '../state/khstate.ts';
import { storeReport } from '../state/record.ts';
import type { KhState } from '../state/resources.ts';

/** Constant-time comparison: a run UUID is the report's credential. */
export function sameUuid(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export type ReportDecision = { ok: true; next: KhState } | { ok: false; reason: string };

/**
 * Whether a parsed report for run uuid may be written into the check's khstate, and the khstate if so.
 * Only the check's active run, before its deadline, and only once; anything else leaves the state untouched.
 */
export function acceptReport(input: {
  state: KhState | null;
  checkRef: string;
  uuid: string;
  report: { OK: boolean; Errors: string[] };
  /** The reporting pod when it was looked up; else the pod the run was created with (a signed URL). */
  pod: string | undefined;
  server: string;
  nowMs: number;
}): ReportDecision {
  const { state, checkRef } = input;
  if (!state) return { ok: false, reason: `check ${checkRef} has no khstate: no run is active` };
  const run = readActiveRun(state);
  if (!run) {
    return {
      ok: false,
      reason: `check ${checkRef} has no active run: the report is late (its run already ended) or replayed`,
    };
  }
  if (!sameUuid(run.uuid, input.uuid) || !sameUuid(state.spec.uuid ?? '', input.uuid)) {
    return {
      ok: false,
      reason: `the run UUID is not the active run of check ${checkRef} (a report from an earlier run, or another check's)`,
    };
  }
  if (input.nowMs > run.deadlineMs) {
    return {
      ok: false,
      reason: `the report arrived after the run's deadline ${new Date(run.deadlineMs).toISOString()}`,
    };
  }
  const previous = readAcceptedReport(state);
  if (previous && sameUuid(previous.uuid, input.uuid)) {
    return {
      ok: false,
      reason: `this run already reported at ${new Date(previous.atMs).toISOString()}; only the first report counts`,
    };
  }
  const accepted: AcceptedReport = {
    uuid: run.uuid,
    atMs: input.nowMs,
    ok: input.report.OK,
    errors: input.report.Errors,
    pod: input.pod ?? run.pod,
  };
  return { ok: true, next: storeReport(state, accepted, { server: input.server }) };
}
