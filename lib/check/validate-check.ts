import type { V1Container } from '@kubernetes/client-node';
import { parseGoDuration } from '../core/duration.ts';
import type { KhCheck, ValidCheck } from '../state/resources.ts';

export type CheckValidation = { ok: true; check: ValidCheck } | { ok: false; reason: string };

/** v2's defaults for an empty or missing field (`DefaultTimeout`, `DefaultRunInterval`). */
export const DEFAULT_TIMEOUT = '5m';
export const DEFAULT_RUN_INTERVAL = '10m';

const NS_PER_MS = 1_000_000;

type DurationField = 'timeout' | 'runInterval';
const EXAMPLES: Record<DurationField, string> = {
  timeout: '"5m" or "90s"',
  runInterval: '"10m" or "1h"',
};

/**
 * Reads one duration field. Unlike v2, an unparsable value is an error rather than a silent default
 * (v2 fell back to 10m for runInterval and, through a bug, to 0 for timeout), and so is a value that is not
 * positive: a check that can never run correctly should say so in its khstate.
 */
function readDuration(
  field: DurationField,
  raw: unknown,
  fallback: string,
): { ok: true; ms: number } | { ok: false; reason: string } {
  const example = EXAMPLES[field];
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
  if (parsed.ns <= 0) {
    return {
      ok: false,
      reason: `spec.${field} ${JSON.stringify(text)} must be greater than zero; use a value such as ${example}`,
    };
  }
  return { ok: true, ms: parsed.ns / NS_PER_MS };
}

/** v2's container checks (`validatePodSpec`), extended to init containers because they too need an image. */
function podSpecProblem(podSpec: unknown): string | undefined {
  const spec = (typeof podSpec === 'object' && podSpec !== null ? podSpec : {}) as {
    containers?: unknown;
    initContainers?: unknown;
  };
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) {
    return 'no containers found in checks PodSpec';
  }
  const initContainers: unknown[] = Array.isArray(spec.initContainers) ? spec.initContainers : [];
  for (const container of [...spec.containers, ...initContainers] as Partial<V1Container>[]) {
    if (typeof container?.image !== 'string' || container.image === '') {
      return `no image found in check's PodSpec for container ${container?.name ?? ''}.`;
    }
  }
  return undefined;
}

/** The pod builder spreads these maps into labels/annotations; anything but string values would be garbage. */
function stringMapProblem(field: 'extraLabels' | 'extraAnnotations', value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const isStringMap =
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.values(value).every((entry) => typeof entry === 'string');
  return isStringMap
    ? undefined
    : `spec.${field} must be a map of string keys to string values, such as {"team": "platform"}`;
}

/**
 * Decides whether a khcheck as read from the API server can be run, and resolves its durations.
 * Pure: the input is not modified and `check.source` is the same object that was passed in.
 * The input is typed as `KhCheck` but treated as untrusted (the v2.2 CRD had no schema at all).
 */
export function validateCheck(check: KhCheck): CheckValidation {
  const { name, namespace, uid } = check.metadata ?? {};
  if (!name || !namespace) return { ok: false, reason: 'metadata.name and metadata.namespace must be set' };
  // The uid anchors the checker pod's ownerReference; only an object read from the API server has one.
  if (!uid) return { ok: false, reason: 'metadata.uid is missing; read the khcheck from the API server' };

  const spec: Partial<KhCheck['spec']> = check.spec ?? {};
  const timeout = readDuration('timeout', spec.timeout, DEFAULT_TIMEOUT);
  if (!timeout.ok) return timeout;
  const runInterval = readDuration('runInterval', spec.runInterval, DEFAULT_RUN_INTERVAL);
  if (!runInterval.ok) return runInterval;

  const problem =
    podSpecProblem(spec.podSpec) ??
    stringMapProblem('extraLabels', spec.extraLabels) ??
    stringMapProblem('extraAnnotations', spec.extraAnnotations);
  if (problem !== undefined) return { ok: false, reason: problem };

  return {
    ok: true,
    check: { name, namespace, uid, timeoutMs: timeout.ms, runIntervalMs: runInterval.ms, source: check },
  };
}
