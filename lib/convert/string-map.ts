import { type FieldPath, isObject } from './field-path.ts';
import type { InputProblem } from './findings.ts';

/**
 * A labels or annotations map as Kubernetes stores it (string values only): undefined when unset or
 * empty, else the map, else a problem naming the first value that is not a string.
 */
export function stringMapField(
  value: unknown,
  field: FieldPath,
): { map: Record<string, string> | undefined } | { problem: InputProblem } {
  if (value === undefined || value === null) return { map: undefined };
  const remedy = 'write it as a mapping of keys to quoted strings';
  if (!isObject(value)) return { problem: { field, problem: 'is not a mapping', remedy } };
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string')
      return {
        problem: { field: [...field, key], problem: `is ${JSON.stringify(v)}, not a string`, remedy },
      };
  }
  const map = value as Record<string, string>;
  return { map: Object.keys(map).length > 0 ? { ...map } : undefined };
}
