import { HISTORY_ANNOTATION, type HistoryEntry, parseHistory } from './history.ts';
import type { OutcomeKind } from './outcome-kind.ts';
import { KH_GROUP, KH_VERSION, type KhState, type KhStateSpec } from './resources.ts';
import { type OutcomeTotals, parseTotals, TOTALS_ANNOTATION } from './totals.ts';
import { parseUptime, UPTIME_ANNOTATION, type Uptime } from './uptime.ts';

/**
 * khrun's own bookkeeping lives in annotations under this prefix: the v2.7 khstate schema prunes unknown
 * spec fields, and v2 readers must keep seeing exactly the spec they know.
 */
export const ANNOTATION = {
  /** The active run: present from the claim until its outcome is recorded. */
  run: 'khrun.dev/run',
  /** The last report accepted by a report endpoint, with the run it belonged to. */
  report: 'khrun.dev/report',
  /** The last recorded outcome. */
  outcome: 'khrun.dev/last-outcome',
  consecutiveFailures: 'khrun.dev/consecutive-failures',
  /** The dispatch claim of the tick that sent the current invocation (lib/schedule). */
  dispatch: 'khrun.dev/dispatched',
  history: HISTORY_ANNOTATION,
  totals: TOTALS_ANNOTATION,
  uptime: UPTIME_ANNOTATION,
} as const;

/** The active run, as the claim wrote it. Times are epoch milliseconds. */
export interface ActiveRun {
  uuid: string;
  startedAtMs: number;
  deadlineMs: number;
  /** Name the checker pod is (to be) created with. */
  pod: string;
  /** Who holds the run, and until when; an expired lease before the deadline means "adopt me". */
  runner: string;
  leaseUntilMs: number;
  /**
   * The invocation that holds the run: unique per invocation (runner names repeat, e.g. two `khrun run` on
   * one host), so it is the fencing token of every write made on the run's behalf (run-holder.ts). Absent
   * in runs claimed by an older khrun; the runner name stands in for it then.
   */
  holder?: string;
}

export interface AcceptedReport {
  uuid: string;
  atMs: number;
  ok: boolean;
  errors: string[];
  pod: string;
}

export interface LastOutcome {
  uuid: string;
  kind: OutcomeKind;
  startedAtMs: number;
  finishedAtMs: number;
  durationMs: number;
}

/**
 * The dispatch claim: which tick sent which invocation for a check, and when. Written with a
 * compare-and-swap before the invocation is sent, so of two ticks that find a check due at once only one
 * dispatches; the loser re-reads and sees it.
 */
export interface DispatchClaim {
  atMs: number;
  /** The Job name, or the Lambda function the invocation went to. */
  ref: string;
  /** The tick that wrote it (its pod or Lambda request). */
  by: string;
}

function parseJson<T>(
  text: string | undefined,
  valid: (v: Record<string, unknown>) => boolean,
): T | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    if (value && typeof value === 'object' && valid(value as Record<string, unknown>)) return value as T;
  } catch {
    // A hand-edited or truncated annotation is treated as absent rather than trusted.
  }
  return undefined;
}

const isNum = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const isStr = (v: unknown) => typeof v === 'string';

export function readActiveRun(state: KhState | null): ActiveRun | undefined {
  return parseJson<ActiveRun>(
    state?.metadata.annotations?.[ANNOTATION.run],
    (v) =>
      isStr(v.uuid) &&
      isNum(v.startedAtMs) &&
      isNum(v.deadlineMs) &&
      isStr(v.pod) &&
      isStr(v.runner) &&
      isNum(v.leaseUntilMs) &&
      (v.holder === undefined || isStr(v.holder)),
  );
}

export function readAcceptedReport(state: KhState | null): AcceptedReport | undefined {
  return parseJson<AcceptedReport>(
    state?.metadata.annotations?.[ANNOTATION.report],
    (v) =>
      isStr(v.uuid) && isNum(v.atMs) && typeof v.ok === 'boolean' && Array.isArray(v.errors) && isStr(v.pod),
  );
}

export function readLastOutcome(state: KhState | null): LastOutcome | undefined {
  return parseJson<LastOutcome>(
    state?.metadata.annotations?.[ANNOTATION.outcome],
    (v) => isStr(v.uuid) && isStr(v.kind) && isNum(v.startedAtMs) && isNum(v.finishedAtMs),
  );
}

export function readDispatchClaim(state: KhState | null): DispatchClaim | undefined {
  const claim = parseJson<DispatchClaim>(
    state?.metadata.annotations?.[ANNOTATION.dispatch],
    (v) => isNum(v.atMs) && isStr(v.ref),
  );
  // A hand-edited annotation is treated as absent: at worst one extra dispatch, which the run claim absorbs.
  return claim && { atMs: claim.atMs, ref: claim.ref, by: isStr(claim.by) ? claim.by : '' };
}

export function readConsecutiveFailures(state: KhState | null): number {
  const n = Number.parseInt(state?.metadata.annotations?.[ANNOTATION.consecutiveFailures] ?? '0', 10);
  return Number.isFinite(n) && n >= 0 ? n : 0;
}

/** A khstate that has never run: hidden from the status page (empty AuthoritativePod, as v2). */
export function newKhState(name: string, namespace: string): KhState {
  return {
    apiVersion: `${KH_GROUP}/${KH_VERSION}`,
    kind: 'KuberhealthyState',
    metadata: { name, namespace, annotations: {} },
    spec: {
      OK: true,
      Errors: [],
      RunDuration: '0s',
      Namespace: namespace,
      Node: '',
      AuthoritativePod: '',
      uuid: '',
    },
  };
}

/**
 * Everything a khstate holds, parsed and validated, as one value: v2's spec (every required field
 * present) and khrun's annotations. Absent annotations are undefined (history: empty), so writing the
 * model back changes nothing that was not changed.
 */
export interface KhStateModel {
  spec: KhStateSpec;
  run?: ActiveRun;
  report?: AcceptedReport;
  dispatch?: DispatchClaim;
  lastOutcome?: LastOutcome;
  consecutiveFailures?: number;
  history: HistoryEntry[];
  totals?: OutcomeTotals;
  uptime?: Uptime;
}

/** Parses a khstate into the model; damaged annotations read as absent, never as trusted values. */
export function readKhState(state: KhState): KhStateModel {
  const annotations = state.metadata.annotations ?? {};
  const base = state.spec ?? newKhState(state.metadata.name, state.metadata.namespace).spec;
  return {
    spec: {
      OK: base.OK ?? false,
      Errors: Array.isArray(base.Errors) ? base.Errors : [],
      RunDuration: base.RunDuration || '0s',
      Namespace: base.Namespace || state.metadata.namespace,
      Node: base.Node ?? '',
      LastRun: base.LastRun ?? null,
      AuthoritativePod: base.AuthoritativePod ?? '',
      uuid: base.uuid ?? '',
    },
    run: readActiveRun(state),
    report: readAcceptedReport(state),
    dispatch: readDispatchClaim(state),
    lastOutcome: readLastOutcome(state),
    consecutiveFailures:
      annotations[ANNOTATION.consecutiveFailures] === undefined ? undefined : readConsecutiveFailures(state),
    history: parseHistory(annotations[ANNOTATION.history]),
    totals:
      annotations[ANNOTATION.totals] === undefined ? undefined : parseTotals(annotations[ANNOTATION.totals]),
    uptime: parseUptime(annotations[ANNOTATION.uptime]),
  };
}

const json = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));

function annotationTexts(model: KhStateModel): Record<string, string | undefined> {
  return {
    [ANNOTATION.run]: json(model.run),
    [ANNOTATION.report]: json(model.report),
    [ANNOTATION.dispatch]: json(model.dispatch),
    [ANNOTATION.outcome]: json(model.lastOutcome),
    [ANNOTATION.consecutiveFailures]:
      model.consecutiveFailures === undefined ? undefined : String(model.consecutiveFailures),
    [ANNOTATION.history]: model.history.length ? JSON.stringify(model.history) : undefined,
    [ANNOTATION.totals]: json(model.totals),
    [ANNOTATION.uptime]: json(model.uptime),
  };
}

/**
 * The khstate carrying model: the spec written whole (the v2.7 schema rejects a missing required field),
 * every khrun.dev annotation set from the model or removed, everything else (labels, other annotations,
 * metadata.resourceVersion as the write's precondition) kept from base. An annotation whose value the
 * model did not change keeps its stored text.
 */
export function writeKhState(base: KhState, model: KhStateModel): KhState {
  const annotations: Record<string, string> = { ...(base.metadata.annotations ?? {}) };
  const before = annotationTexts(readKhState(base));
  for (const [key, text] of Object.entries(annotationTexts(model))) {
    if (text === undefined) delete annotations[key];
    else if (text !== before[key] || annotations[key] === undefined) annotations[key] = text;
  }
  return { ...base, metadata: { ...base.metadata, annotations }, spec: { ...model.spec } };
}

/** Changes a khstate through its model: parse, change, write back (one value in, one object out). */
export function updateKhState(base: KhState, change: (model: KhStateModel) => KhStateModel): KhState {
  return writeKhState(base, change(readKhState(base)));
}
