import { formatGoDuration, parseGoDuration } from '../core/duration.ts';
import { toKubeTime } from '../core/kube-time.ts';
import { type ActiveRun, ANNOTATION, readActiveRun, readKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { HC_DEFAULT_TIMEOUT, type HealthCheck, type HealthCheckStatus } from './resources.ts';
import { readHealthCheckStatus } from './status-view.ts';

/**
 * A HealthCheck seen as the khstate lib/run and lib/report work on, and the writes that carry a changed
 * view back. v3 keeps a check's state in `status` (the status subresource); khrun keeps what v3 has no field
 * for (the lease and holder of the run, the accepted report, history, totals, dispatch) in the same
 * `khrun.dev/*` annotations as on a khstate, on the HealthCheck itself.
 *
 * The run lock is v3's: `status.currentUUID`. A `khrun.dev/run` annotation counts only while its uuid is
 * the currentUUID; a currentUUID without one (set by v3's controller, or a khrun claim whose second write
 * never landed) is shown as a run held by FOREIGN_RUNNER until its deadline, so nobody adopts it and it is
 * closed as timed out once its deadline passed, as v3 itself would.
 */

/** v2 spec fields that v3's status has no place for. */
export const HC_ANNOTATION = {
  node: 'khrun.dev/node',
  authoritativePod: 'khrun.dev/authoritative-pod',
} as const;

/** The holder shown for a currentUUID that khrun holds no lease on. */
export const FOREIGN_RUNNER = 'kuberhealthy';

const sec = (ms: number) => Math.floor(ms / 1000);

/** The timeout a run of hc gets, as v3 resolves it (a missing, unparsable or non-positive value: 30s). */
export function timeoutMsOf(hc: HealthCheck): number {
  const raw = hc.spec?.timeout;
  const parsed = parseGoDuration(typeof raw === 'string' && raw !== '' ? raw : HC_DEFAULT_TIMEOUT);
  return parsed.ok && parsed.ns > 0 ? parsed.ns / 1e6 : 30_000;
}

const asState = (hc: HealthCheck) => ({ metadata: hc.metadata }) as KhState;

/** The run behind a currentUUID that has no khrun lease: held by nobody khrun knows, until its deadline. */
export function foreignRunOf(hc: HealthCheck): ActiveRun | undefined {
  const { currentUUID, lastRunUnix } = readHealthCheckStatus(hc);
  if (!currentUUID || readActiveRun(asState(hc))?.uuid === currentUUID) return undefined;
  const startedAtMs = lastRunUnix * 1000;
  const deadlineMs = startedAtMs + timeoutMsOf(hc);
  return {
    uuid: currentUUID,
    startedAtMs,
    deadlineMs,
    pod: '',
    runner: FOREIGN_RUNNER,
    leaseUntilMs: deadlineMs,
  };
}

/** The khstate view of a HealthCheck; metadata.resourceVersion is the HealthCheck's (the writes' precondition). */
export function stateViewOf(hc: HealthCheck): KhState {
  const status = readHealthCheckStatus(hc);
  const annotations: Record<string, string> = { ...(hc.metadata.annotations ?? {}) };
  const foreign = foreignRunOf(hc);
  if (!status.currentUUID) delete annotations[ANNOTATION.run];
  else if (foreign) annotations[ANNOTATION.run] = JSON.stringify(foreign);
  const lastResultUnix = Math.max(status.lastOKUnix, status.lastFailureUnix);
  const lastOutcomeUuid = readKhState({ metadata: { ...hc.metadata, annotations } } as KhState).lastOutcome
    ?.uuid;
  return {
    apiVersion: hc.apiVersion,
    kind: hc.kind,
    metadata: { ...hc.metadata, annotations },
    spec: {
      OK: status.ok,
      Errors: status.errors,
      RunDuration: formatGoDuration(status.runDuration),
      Namespace: status.namespace || hc.metadata.namespace,
      Node: annotations[HC_ANNOTATION.node] ?? '',
      LastRun: lastResultUnix > 0 ? toKubeTime(lastResultUnix * 1000) : null,
      AuthoritativePod: annotations[HC_ANNOTATION.authoritativePod] ?? '',
      uuid: status.currentUUID || lastOutcomeUuid || '',
    },
  };
}

/** What carrying a view back takes: a status write, an annotation write, in which order. */
export interface HealthCheckWritePlan {
  /** The whole new status (undefined: unchanged). */
  status?: HealthCheckStatus;
  /** The whole new annotation map (undefined: unchanged). */
  annotations?: Record<string, string>;
  /**
   * Status before annotations when the run lock (currentUUID) changes: the claim is then the status write
   * of currentUUID, preconditioned on the resourceVersion the decision was made on, and a recording's
   * result is visible to v3 before khrun's bookkeeping follows. See healthcheck-port.ts for why either
   * half alone is safe.
   */
  statusFirst: boolean;
}

/** v3's status in its Go field order, zero fields left out (`omitempty`) except ok and currentUUID. */
export function canonicalStatus(s: Required<HealthCheckStatus>): HealthCheckStatus {
  const out: Record<string, unknown> = { ok: s.ok };
  if (s.errors.length) out.errors = s.errors;
  if (s.consecutiveFailures) out.consecutiveFailures = s.consecutiveFailures;
  if (s.runDuration) out.runDuration = s.runDuration;
  if (s.namespace) out.namespace = s.namespace;
  out.currentUUID = s.currentUUID;
  for (const key of OMITEMPTY_TAIL) if (s[key]) out[key] = s[key];
  return out as unknown as HealthCheckStatus;
}

const OMITEMPTY_TAIL = [
  'lastRunUnix',
  'successCount',
  'failureCount',
  'lastOKUnix',
  'lastFailureUnix',
  'additionalMetadata',
] as const;

const sortedJson = (m: Record<string, string>) =>
  JSON.stringify(
    Object.keys(m)
      .sort()
      .map((k) => [k, m[k]]),
  );

/** khrun's annotations of a map: every `khrun.dev/` key. */
export const isKhrunKey = (key: string) => key.startsWith('khrun.dev/');

/**
 * The writes that turn current into the HealthCheck the view describes. Pure. A newly recorded outcome
 * (a new history entry that is not a skip) counts as v3 counts a report: successCount or failureCount
 * plus one, lastOKUnix or lastFailureUnix at the result's time.
 */
export function planHealthCheckWrite(current: HealthCheck, view: KhState): HealthCheckWritePlan {
  const cur = readHealthCheckStatus(current);
  const before = readKhState(stateViewOf(current));
  const after = readKhState(view);
  const newest = after.history.at(-1);
  const counted =
    newest !== undefined &&
    newest.kind !== 'Skipped' &&
    JSON.stringify(newest) !== JSON.stringify(before.history.at(-1));
  const resultMs = after.spec.LastRun ? Date.parse(after.spec.LastRun) : Number.NaN;
  const resultUnix = sec(Number.isFinite(resultMs) ? resultMs : (newest?.atMs ?? 0));
  const duration = parseGoDuration(after.spec.RunDuration);
  const currentUUID = after.run?.uuid ?? '';
  const lastRunMs = after.run?.startedAtMs ?? (counted ? after.lastOutcome?.startedAtMs : undefined);
  const next = canonicalStatus({
    ...cur,
    ok: after.spec.OK,
    errors: after.spec.OK ? [] : after.spec.Errors,
    consecutiveFailures: 0,
    runDuration: duration.ok ? duration.ns : cur.runDuration,
    // The view shows the check's namespace for an unset one; written when a result is (as v3's report does).
    namespace:
      counted || after.spec.Namespace !== before.spec.Namespace ? after.spec.Namespace : cur.namespace,
    currentUUID,
    lastRunUnix: lastRunMs === undefined ? cur.lastRunUnix : sec(lastRunMs),
    successCount: cur.successCount + (counted && newest.ok ? 1 : 0),
    failureCount: cur.failureCount + (counted && !newest.ok ? 1 : 0),
    lastOKUnix: counted && newest.ok ? resultUnix : cur.lastOKUnix,
    lastFailureUnix: counted && !newest.ok ? resultUnix : cur.lastFailureUnix,
  });
  const stored = canonicalStatus({ ...cur, consecutiveFailures: 0 });

  const annotations: Record<string, string> = { ...(current.metadata.annotations ?? {}) };
  const wanted = view.metadata.annotations ?? {};
  for (const key of new Set([...Object.keys(annotations), ...Object.keys(wanted)])) {
    if (!isKhrunKey(key)) continue;
    if (wanted[key] === undefined) delete annotations[key];
    else annotations[key] = wanted[key];
  }
  // A foreign run stays in status alone: it is written as khrun's only once khrun holds it (adoption).
  const foreign = foreignRunOf(current);
  if (foreign && annotations[ANNOTATION.run] === JSON.stringify(foreign)) delete annotations[ANNOTATION.run];
  const extra = {
    [HC_ANNOTATION.node]: after.spec.Node,
    [HC_ANNOTATION.authoritativePod]: after.spec.AuthoritativePod,
  };
  for (const [key, value] of Object.entries(extra)) {
    if (value) annotations[key] = value;
    else delete annotations[key];
  }
  const annotationsChanged = sortedJson(annotations) !== sortedJson(current.metadata.annotations ?? {});
  return {
    ...(JSON.stringify(next) !== JSON.stringify(stored) ? { status: next } : {}),
    ...(annotationsChanged ? { annotations } : {}),
    statusFirst: currentUUID !== cur.currentUUID,
  };
}

/**
 * What of a HealthCheck khrun's writes depend on: the status and the khrun.dev annotations. A second write
 * may be re-applied on a newer resourceVersion only while this is unchanged since the first (a spec or
 * label edit in between changes neither).
 */
export function khrunPartsOf(hc: HealthCheck): string {
  const own = Object.fromEntries(
    Object.entries(hc.metadata.annotations ?? {}).filter(([k]) => isKhrunKey(k)),
  );
  return JSON.stringify([
    canonicalStatus({ ...readHealthCheckStatus(hc), consecutiveFailures: 0 }),
    sortedJson(own),
  ]);
}
