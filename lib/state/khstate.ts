import { KH_GROUP, KH_VERSION, type KhState, type KhStateSpec } from './resources.ts';

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
}

export interface AcceptedReport {
  uuid: string;
  atMs: number;
  ok: boolean;
  errors: string[];
  pod: string;
}

export const OutcomeKind = {
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  TimedOut: 'TimedOut',
  ExecutionError: 'ExecutionError',
  Skipped: 'Skipped',
} as const;
export type OutcomeKind = (typeof OutcomeKind)[keyof typeof OutcomeKind];

export interface LastOutcome {
  uuid: string;
  kind: OutcomeKind;
  startedAtMs: number;
  finishedAtMs: number;
  durationMs: number;
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
      isNum(v.leaseUntilMs),
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
 * The next version of a khstate: spec fields merged, annotations set (or removed with undefined). Always
 * produces every required spec field, and keeps metadata.resourceVersion as the write's precondition.
 */
export function nextKhState(
  current: KhState,
  spec: Partial<KhStateSpec>,
  annotations: Record<string, string | undefined>,
): KhState {
  const merged: Record<string, string> = { ...(current.metadata.annotations ?? {}) };
  for (const [k, v] of Object.entries(annotations)) {
    if (v === undefined) delete merged[k];
    else merged[k] = v;
  }
  const base = current.spec ?? newKhState(current.metadata.name, current.metadata.namespace).spec;
  return {
    ...current,
    metadata: { ...current.metadata, annotations: merged },
    spec: {
      OK: base.OK ?? false,
      Errors: Array.isArray(base.Errors) ? base.Errors : [],
      RunDuration: base.RunDuration || '0s',
      Namespace: base.Namespace || current.metadata.namespace,
      Node: base.Node ?? '',
      LastRun: base.LastRun ?? null,
      AuthoritativePod: base.AuthoritativePod ?? '',
      uuid: base.uuid ?? '',
      ...spec,
    },
  };
}
