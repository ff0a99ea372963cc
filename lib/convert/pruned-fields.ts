import { type FieldPath, isObject } from './field-path.ts';

/**
 * The fields of `sent` that `stored` lacks: what the API server pruned (a CRD schema without them). Only
 * removals count; the server's defaults and its own fields are additions. Lists are compared item by item.
 */
export function prunedFields(sent: unknown, stored: unknown, at: FieldPath = []): FieldPath[] {
  if (Array.isArray(sent))
    return Array.isArray(stored) ? sent.flatMap((item, i) => prunedFields(item, stored[i], [...at, i])) : [];
  if (!isObject(sent) || !isObject(stored)) return [];
  return Object.entries(sent).flatMap(([key, value]) => {
    if (value === null || value === undefined) return [];
    return key in stored ? prunedFields(value, stored[key], [...at, key]) : [[...at, key]];
  });
}
