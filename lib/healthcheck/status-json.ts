import { parseGoDuration } from '../core/duration.ts';
import { HC_DEFAULT_RUN_INTERVAL, type HealthCheck } from './resources.ts';
import { timeoutMsOf } from './state-view.ts';
import { readHealthCheckStatus } from './status-view.ts';

/**
 * One HealthCheck in khrun's status JSON: v3.0.0's `/json` per-check entry (`health.CheckDetail`: the
 * HealthCheckStatus with v3's lowercase keys and omitempty, then `nextRunUnix`, `timeoutSeconds`,
 * `runIntervalSeconds`), so code that reads v3's entries reads these. Two choices differ from v3, on purpose:
 * `currentUUID` is always `""` here, because the run UUID is the only credential a v3 report carries and the
 * status JSON is readable by anyone who reaches it (khchecks' `uuid` is hidden the same way during a run);
 * and `podName` is left out (v3 lists pods on every request to fill it; the status JSON reads one list).
 * `running` says what the hidden UUID would have (v3's page derives it from `currentUUID != ""`).
 */
export interface V3CheckDetail {
  ok: boolean;
  errors?: string[];
  runDuration?: number;
  namespace?: string;
  currentUUID: '';
  lastRunUnix?: number;
  successCount?: number;
  failureCount?: number;
  lastOKUnix?: number;
  lastFailureUnix?: number;
  additionalMetadata?: string;
  nextRunUnix?: number;
  timeoutSeconds?: number;
  runIntervalSeconds?: number;
  running: boolean;
}

/** The run interval v3 resolves: spec.runInterval, else its 10m default (unparsable or non-positive too). */
export function runIntervalMsOf(hc: HealthCheck): number {
  const raw = hc.spec?.runInterval;
  const parsed = parseGoDuration(typeof raw === 'string' && raw !== '' ? raw : HC_DEFAULT_RUN_INTERVAL);
  return parsed.ok && parsed.ns > 0 ? parsed.ns / 1e6 : 600_000;
}

/** `namespace/name`: v3 keys `/json` by name only, which folds same-named checks of two namespaces into one. */
export const healthCheckKey = (hc: HealthCheck) => `${hc.metadata.namespace}/${hc.metadata.name}`;

/** A HealthCheck is listed once a run started or a result was recorded (as khstates once they ran). */
export function healthCheckHasRun(hc: HealthCheck): boolean {
  const s = readHealthCheckStatus(hc);
  return s.lastRunUnix > 0 || s.successCount + s.failureCount > 0;
}

const positive = (key: string, n: number) => (n > 0 ? { [key]: n } : {});

/** v3's per-check entry of one HealthCheck (see V3CheckDetail). Pure. */
export function healthCheckDetail(hc: HealthCheck): V3CheckDetail {
  const s = readHealthCheckStatus(hc);
  const running = s.currentUUID !== '';
  const intervalMs = runIntervalMsOf(hc);
  const detail: V3CheckDetail = {
    ok: s.ok,
    ...(s.errors.length > 0 ? { errors: s.errors } : {}),
    ...positive('runDuration', s.runDuration),
    // v3 fills an empty status.namespace with the check's own namespace in /json.
    namespace: s.namespace || hc.metadata.namespace,
    currentUUID: '',
    ...positive('lastRunUnix', s.lastRunUnix),
    ...positive('successCount', s.successCount),
    ...positive('failureCount', s.failureCount),
    ...positive('lastOKUnix', s.lastOKUnix),
    ...positive('lastFailureUnix', s.lastFailureUnix),
    ...(s.additionalMetadata ? { additionalMetadata: s.additionalMetadata } : {}),
    // v3: the next run is lastRunUnix + runInterval, shown only between runs.
    ...(!running && s.lastRunUnix > 0 ? { nextRunUnix: s.lastRunUnix + Math.floor(intervalMs / 1000) } : {}),
    ...positive('timeoutSeconds', Math.floor(timeoutMsOf(hc) / 1000)),
    ...positive('runIntervalSeconds', Math.floor(intervalMs / 1000)),
    running,
  } as V3CheckDetail;
  return detail;
}

/**
 * The HealthChecks the status JSON lists, sorted by key: those that ran, in the wanted namespaces (the
 * HealthCheck's own namespace; v3 filters `?namespace=` the same way), with their non-blank errors for
 * the global OK and Errors.
 */
export function listedHealthChecks(
  hcs: readonly HealthCheck[],
  namespaces?: readonly string[],
): Array<{ key: string; hc: HealthCheck; detail: V3CheckDetail; errors: string[] }> {
  const wanted = namespaces && namespaces.length > 0 ? new Set(namespaces) : undefined;
  return hcs
    .filter((hc) => healthCheckHasRun(hc) && (!wanted || wanted.has(hc.metadata.namespace)))
    .map((hc) => {
      const detail = healthCheckDetail(hc);
      return {
        key: healthCheckKey(hc),
        hc,
        detail,
        errors: (detail.errors ?? []).filter((e) => e.trim() !== ''),
      };
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
