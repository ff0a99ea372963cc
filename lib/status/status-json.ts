import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import { listedHealthChecks, type V3CheckDetail } from '../healthcheck/status-json.ts';
import { readActiveRun, readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { isJobState } from '../state/workload.ts';
import { type CheckAlerts, checkAlerts } from './check-alerts.ts';

/** One check in v2's status JSON: the khstate spec with v2's keys, in v2's (Go struct) order. */
export interface V2WorkloadDetails {
  OK: boolean;
  Errors: string[];
  RunDuration: string;
  Namespace: string;
  Node: string;
  LastRun?: string;
  AuthoritativePod: string;
  uuid: string;
}

/** Kuberhealthy v2's `health.State`, as `GET /` serves it. */
export interface V2Status {
  OK: boolean;
  Errors: string[];
  CheckDetails: Record<string, V2WorkloadDetails>;
  JobDetails: Record<string, V2WorkloadDetails>;
  CurrentMaster: string;
  /** Later v2 only, when configured (`stateMetadata`). */
  Metadata?: Record<string, string>;
  /** khrun: Kuberhealthy v3 HealthChecks by `namespace/name`, as v3's `/json` entries; absent when none ran. */
  HealthCheckDetails?: Record<string, V3CheckDetail>;
  /**
   * khrun, when asked for (`?khrun=1`, `khrun status -o json`): each listed check's availability, alert,
   * silence and blocking parent, by the key of CheckDetails and JobDetails (a HealthCheck: `HealthCheck:` and
   * its HealthCheckDetails key).
   */
  KhrunDetails?: Record<string, CheckAlerts>;
}

export interface StatusOptions {
  /** Only checks whose spec.Namespace is listed; empty or absent means all (v2's `?namespace=a,b`). */
  namespaces?: readonly string[];
  /** The status server's name (v2: the master pod). */
  currentMaster: string;
  metadata?: Record<string, string>;
  /** HealthChecks to list beside the khchecks (healthcheck-json.ts); their failures count in OK and Errors. */
  healthChecks?: readonly HealthCheck[];
  /** Add KhrunDetails as of this time (not v2's: only when asked for). */
  khrunDetailsAtMs?: number;
}

/** v2's parsing of `?namespace=`: comma-separated, empty items dropped (`?namespace=,` means all). */
export function parseNamespaceFilter(value: string | null | undefined): string[] {
  return (value ?? '').split(',').filter((ns) => ns.length > 0);
}

/** A khstate that never ran has an empty AuthoritativePod; v2 hides it from the status page. */
export const hasRun = (state: KhState) => Boolean(state.spec?.AuthoritativePod);

/**
 * LastRun as Go re-marshals a metav1.Time: UTC, RFC 3339, whole seconds. Values Go could not parse are
 * passed through unchanged; null or absent is omitted (omitempty on a nil pointer).
 */
export function normalizeLastRun(value: string | null | undefined): string | undefined {
  if (!value) return undefined;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) return value;
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * spec.uuid is the run that may report right now: a credential while a run is active. The status page is
 * readable by anyone who can reach it, so during a run it shows the UUID of the run whose result it shows
 * (the last recorded one) instead; between runs the two are the same.
 */
export function displayedUuid(state: KhState): string {
  const uuid = state.spec?.uuid ?? '';
  const active = readActiveRun(state);
  if (!active || active.uuid !== uuid) return uuid;
  return readLastOutcome(state)?.uuid ?? '';
}

export function workloadDetails(state: KhState): V2WorkloadDetails {
  const spec = state.spec;
  const lastRun = normalizeLastRun(spec?.LastRun);
  return {
    OK: spec?.OK === true,
    Errors: Array.isArray(spec?.Errors) ? spec.Errors.filter((e) => typeof e === 'string') : [],
    RunDuration: spec?.RunDuration ?? '',
    Namespace: spec?.Namespace ?? '',
    Node: spec?.Node ?? '',
    ...(lastRun === undefined ? {} : { LastRun: lastRun }),
    AuthoritativePod: spec?.AuthoritativePod ?? '',
    uuid: displayedUuid(state),
  };
}

export const checkKey = (state: KhState) => `${state.metadata.namespace}/${state.metadata.name}`;

/**
 * v2's status from khstates: never-run checks hidden, the namespace filter on spec.Namespace, global OK
 * false iff some listed check has a non-blank error (the stored OK flags are copied, not trusted), and the
 * global Errors are those non-blank errors. Keys are sorted, as Go marshals maps.
 */
export function buildStatus(states: readonly KhState[], opts: StatusOptions): V2Status {
  const wanted = opts.namespaces && opts.namespaces.length > 0 ? new Set(opts.namespaces) : undefined;
  const listed = states
    .filter((s) => hasRun(s) && (!wanted || wanted.has(s.spec.Namespace)))
    .map((s) => [checkKey(s), s] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const status: V2Status = {
    OK: true,
    Errors: [],
    CheckDetails: {},
    JobDetails: {},
    CurrentMaster: opts.currentMaster,
  };
  for (const [key, state] of listed) {
    const details = workloadDetails(state);
    for (const error of details.Errors) {
      if (error.trim() === '') continue;
      status.Errors.push(error);
      status.OK = false;
    }
    // v2 lists a khjob's khstate under JobDetails; khrun labels those it writes (state/workload.ts).
    (isJobState(state) ? status.JobDetails : status.CheckDetails)[key] = details;
  }
  if (opts.metadata && Object.keys(opts.metadata).length > 0) status.Metadata = opts.metadata;
  const hcs = listedHealthChecks(opts.healthChecks ?? [], opts.namespaces);
  if (hcs.length > 0) status.HealthCheckDetails = Object.fromEntries(hcs.map((h) => [h.key, h.detail]));
  for (const { detail, errors } of hcs) {
    // v3's rule for its global OK: a HealthCheck whose status says not OK.
    if (!detail.ok) status.OK = false;
    status.Errors.push(...errors);
  }
  const atMs = opts.khrunDetailsAtMs;
  if (atMs !== undefined)
    status.KhrunDetails = Object.fromEntries([
      ...listed.map(([key, state]) => [key, checkAlerts(state, atMs)] as const),
      ...hcs.map(({ key, hc }) => [`HealthCheck:${key}`, checkAlerts(stateViewOf(hc), atMs)] as const),
    ]);
  return status;
}

/**
 * JSON as Go's json.MarshalIndent(v, "", "  ") writes it: same layout, and `<`, `>`, `&`, U+2028 and U+2029
 * escaped (those characters never occur inside an escape sequence, so replacing them in the output is safe).
 * This also makes the text safe to embed in an HTML script element.
 */
export function goJson(value: unknown, indent = 2): string {
  return JSON.stringify(value, null, indent).replace(/[<>&\u2028\u2029]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}
