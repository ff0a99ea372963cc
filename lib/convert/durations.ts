import { parseGoDuration } from '../core/duration.ts';
import type { FieldPath } from './field-path.ts';
import type { InputProblem } from './findings.ts';

/**
 * The defaults each side uses when a duration is unset. v2.7.1 (cmd/kuberhealthy/main.go): timeout 5m,
 * runInterval 10m; v3.0.0 (internal/kuberhealthy/kuberhealthy.go): timeout 30s (also for a timeout <= 0),
 * runInterval 10m. Conversion writes the source side's value explicitly wherever the two differ.
 */
export const V2_DEFAULT_TIMEOUT = '5m';
export const V3_DEFAULT_TIMEOUT = '30s';
export const DEFAULT_RUN_INTERVAL = '10m';

/**
 * A duration field as both sides read it (Go's time.ParseDuration; v3's metav1.Duration parses the same
 * way): undefined when unset, the text when it is a positive duration, else a problem. v2 turned an
 * unparsable interval into 10m and an unparsable timeout into 0 with only a log line, and v3 cannot decode
 * the resource at all: neither is worth carrying over, so the input must be fixed first.
 */
export function durationField(
  value: unknown,
  field: FieldPath,
): { text: string | undefined } | { problem: InputProblem } {
  if (value === undefined || value === null || value === '') return { text: undefined };
  const remedy = 'write a positive Go duration such as 90s, 5m or 1h30m';
  if (typeof value !== 'string')
    return { problem: { field, problem: `is ${JSON.stringify(value)}, not a duration string`, remedy } };
  const parsed = parseGoDuration(value);
  if (!parsed.ok)
    return { problem: { field, problem: `"${value}" is not a Go duration (${parsed.error})`, remedy } };
  if (parsed.ns <= 0) return { problem: { field, problem: `"${value}" is not positive`, remedy } };
  return { text: value };
}
