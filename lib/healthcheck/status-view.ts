import type { HealthCheck, HealthCheckStatus } from './resources.ts';

const int = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : 0);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * A HealthCheck's status read defensively and completed: every field present, zero where v3 omitted it
 * (`omitempty`) or where a hand edit left a wrong type. `ok` is false only when written false: a never-run
 * check has no status, and v3's page shows it as not OK too, so missing reads as false like Go's zero value.
 */
export function readHealthCheckStatus(hc: HealthCheck | null | undefined): Required<HealthCheckStatus> {
  const s = (hc?.status ?? {}) as Partial<Record<keyof HealthCheckStatus, unknown>>;
  return {
    ok: s.ok === true,
    errors: Array.isArray(s.errors) ? s.errors.filter((e): e is string => typeof e === 'string') : [],
    consecutiveFailures: int(s.consecutiveFailures),
    runDuration: int(s.runDuration),
    namespace: str(s.namespace),
    currentUUID: str(s.currentUUID),
    lastRunUnix: int(s.lastRunUnix),
    successCount: int(s.successCount),
    failureCount: int(s.failureCount),
    lastOKUnix: int(s.lastOKUnix),
    lastFailureUnix: int(s.lastFailureUnix),
    additionalMetadata: str(s.additionalMetadata),
  };
}

/** What a lister (status JSON, metrics, `khrun` tables) shows of one HealthCheck. */
export interface HealthCheckStatusView {
  name: string;
  namespace: string;
  ok: boolean;
  errors: string[];
  /** The run in progress (v3's lock), or '' when idle. */
  currentUuid: string;
  running: boolean;
  /** Whether any run was ever recorded (a never-run check shows neither OK nor failing). */
  hasRun: boolean;
  /** Start of the last (or current) run, epoch ms; 0 = never. */
  lastRunMs: number;
  lastOkMs: number;
  lastFailureMs: number;
  successCount: number;
  failureCount: number;
  /** `runDuration` (Go nanoseconds) in milliseconds. */
  runDurationMs: number;
  /** The namespace the last checker pod ran in (v3 writes the check's own). */
  podNamespace: string;
}

/** The lister's view of one HealthCheck. Pure. */
export function healthCheckStatusView(hc: HealthCheck): HealthCheckStatusView {
  const s = readHealthCheckStatus(hc);
  return {
    name: hc.metadata.name,
    namespace: hc.metadata.namespace,
    ok: s.ok,
    errors: s.errors,
    currentUuid: s.currentUUID,
    running: s.currentUUID !== '',
    hasRun: s.lastRunUnix > 0 || s.successCount + s.failureCount > 0,
    lastRunMs: s.lastRunUnix * 1000,
    lastOkMs: s.lastOKUnix * 1000,
    lastFailureMs: s.lastFailureUnix * 1000,
    successCount: s.successCount,
    failureCount: s.failureCount,
    runDurationMs: s.runDuration / 1_000_000,
    podNamespace: s.namespace || hc.metadata.namespace,
  };
}
