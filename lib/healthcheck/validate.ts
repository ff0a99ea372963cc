import { validateCheck } from '../check/validate-check.ts';
import { parseGoDuration } from '../core/duration.ts';
import type { KhCheck, ValidCheck } from '../state/resources.ts';
import { checkViewOf } from './check-view.ts';
import { HC_DEFAULT_RUN_INTERVAL, HC_DEFAULT_TIMEOUT, type HealthCheck } from './resources.ts';

/** A HealthCheck that can be run: v3's durations resolved (milliseconds), and the khcheck view the run uses. */
export interface ValidHealthCheck {
  name: string;
  namespace: string;
  uid: string;
  timeoutMs: number;
  runIntervalMs: number;
  singleRunOnly: boolean;
  source: HealthCheck;
  /** The same check as the khcheck-shaped value lib/run runs (check-view.ts). */
  check: ValidCheck;
}

export type HealthCheckValidation = { ok: true; check: ValidHealthCheck } | { ok: false; reason: string };

const NS_PER_MS = 1_000_000;

type Field = 'timeout' | 'runInterval';

/**
 * One `metav1.Duration` field. A string Go cannot parse is an error: v3's typed client cannot even decode
 * such an object. Missing or empty takes v3's default; so does a timeout that is not positive
 * (`checkTimeoutDuration` falls back when `Duration <= 0`). A runInterval that is not positive is refused:
 * under v3 it would start the check again every scheduler pass.
 */
function readDuration(field: Field, raw: unknown): { ok: true; ms: number } | { ok: false; reason: string } {
  const example = field === 'timeout' ? '"30s" or "2m"' : '"10m" or "1h"';
  const fallback = field === 'timeout' ? HC_DEFAULT_TIMEOUT : HC_DEFAULT_RUN_INTERVAL;
  if (raw !== undefined && raw !== null && typeof raw !== 'string') {
    return {
      ok: false,
      reason: `spec.${field} must be a string holding a Go duration, got ${typeof raw} ${JSON.stringify(raw)}; use a value such as ${example}`,
    };
  }
  const text = raw || fallback;
  const parsed = parseGoDuration(text);
  if (!parsed.ok) {
    return {
      ok: false,
      reason: `spec.${field} ${JSON.stringify(text)} is not a Go duration (${parsed.error}); use a value such as ${example}`,
    };
  }
  if (parsed.ns > 0) return { ok: true, ms: parsed.ns / NS_PER_MS };
  if (field === 'timeout') return readDuration(field, fallback);
  return {
    ok: false,
    reason: `spec.${field} ${JSON.stringify(text)} must be greater than zero; use a value such as ${example}`,
  };
}

/**
 * Decides whether a HealthCheck as read from the API server can be run. Pure; the input is treated as
 * untrusted. The pod spec and the label/annotation maps are checked by the khcheck validator on the view,
 * so both kinds refuse the same mistakes with the same words.
 */
export function validateHealthCheck(hc: HealthCheck): HealthCheckValidation {
  const { name, namespace, uid } = hc?.metadata ?? {};
  if (!name || !namespace) return { ok: false, reason: 'metadata.name and metadata.namespace must be set' };
  if (!uid) return { ok: false, reason: 'metadata.uid is missing; read the HealthCheck from the API server' };
  const spec: Partial<HealthCheck['spec']> = hc.spec ?? {};
  const timeout = readDuration('timeout', spec.timeout);
  if (!timeout.ok) return timeout;
  const runInterval = readDuration('runInterval', spec.runInterval);
  if (!runInterval.ok) return runInterval;
  if (spec.singleRunOnly !== undefined && typeof spec.singleRunOnly !== 'boolean') {
    return { ok: false, reason: 'spec.singleRunOnly must be true or false' };
  }
  const podSpec = spec.podSpec as unknown;
  if (typeof podSpec !== 'object' || podSpec === null || !('spec' in podSpec)) {
    return {
      ok: false,
      reason:
        'spec.podSpec.spec is missing: a HealthCheck wraps the pod spec as podSpec: {metadata: ..., spec: {containers: [...]}}',
    };
  }
  const view = validateCheck(checkViewOf(hc, { timeoutMs: timeout.ms, runIntervalMs: runInterval.ms }));
  if (!view.ok) return { ok: false, reason: view.reason.replace(/^spec\.podSpec\b/, 'spec.podSpec.spec') };
  return {
    ok: true,
    check: {
      name,
      namespace,
      uid,
      timeoutMs: timeout.ms,
      runIntervalMs: runInterval.ms,
      singleRunOnly: spec.singleRunOnly === true,
      source: hc,
      check: view.check,
    },
  };
}

/**
 * The khcheck lib/run reads for hc: the resolved view when hc is valid; else a view with hc's own values
 * (durations resolved where they can be), which the khcheck validator refuses in turn, so the run records
 * the problem as an invalid check, as for a khcheck.
 */
export function runnableViewOf(hc: HealthCheck): KhCheck {
  const valid = validateHealthCheck(hc);
  if (valid.ok) return valid.check.check.source;
  const timeout = readDuration('timeout', hc.spec?.timeout);
  const runInterval = readDuration('runInterval', hc.spec?.runInterval);
  const view = checkViewOf(hc, {
    timeoutMs: timeout.ok ? timeout.ms : 0,
    runIntervalMs: runInterval.ok ? runInterval.ms : 0,
  });
  return {
    ...view,
    spec: {
      ...view.spec,
      ...(timeout.ok ? {} : { timeout: String(hc.spec?.timeout) }),
      ...(runInterval.ok ? {} : { runInterval: String(hc.spec?.runInterval) }),
    },
  };
}
