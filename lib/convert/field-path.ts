/**
 * A field of a resource as segments (`['spec', 'podSpec', 'containers', 0, 'image']`), kept as data so a
 * finding can be printed (`spec.podSpec.containers[0].image`) and, in tests, applied to a resource.
 */
export type FieldPath = readonly (string | number)[];

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** As kubectl's JSONPath-like messages write it: dots, `[0]` for items, `["a.b/c"]` for other keys. */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at path, or undefined where any step is missing. */
export function getPath(root: unknown, path: FieldPath): unknown {
  let at: unknown = root;
  for (const segment of path) {
    if (typeof segment === 'number') at = Array.isArray(at) ? at[segment] : undefined;
    else at = isObject(at) ? at[segment] : undefined;
    if (at === undefined) return undefined;
  }
  return at;
}

/** Deletes the field at path (mutates root); a missing step is nothing to delete. */
export function deletePath(root: unknown, path: FieldPath): void {
  const parent = getPath(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (typeof last === 'string' && isObject(parent)) delete parent[last];
  else if (typeof last === 'number' && Array.isArray(parent)) parent.splice(last, 1);
}

/** Sets the field at path (mutates root), making the objects on the way. */
export function setPath(root: JsonObject, path: FieldPath, value: Json): void {
  let at: JsonObject | Json[] = root;
  path.forEach((segment, i) => {
    const last = i === path.length - 1;
    const holder = at as Record<string | number, Json>;
    if (last) holder[segment] = value;
    else {
      const next = holder[segment];
      if (typeof next !== 'object' || next === null)
        holder[segment] = typeof path[i + 1] === 'number' ? [] : {};
      at = holder[segment] as JsonObject | Json[];
    }
  });
}

/** A deep copy of JSON data: conversions never alias their input. */
export const cloneJson = <T extends Json>(value: T): T => structuredClone(value);
