/**
 * What the API server or the kubelet would refuse in a checker pod's spec, found before anything is
 * applied (pure): `khrun validate` reports these, and `khrun convert` refuses to write a check that has an
 * error among them. A warning is legal but likely a mistake (a variable set twice: the last one wins).
 */

/** A field as segments: `['spec', 'podSpec', 'containers', 0, 'image']` (lib/convert's FieldPath). */
export type PodFieldPath = readonly (string | number)[];

export interface PodSpecProblem {
  severity: 'error' | 'warning';
  field: PodFieldPath;
  problem: string;
  remedy: string;
}

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'] as const;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Kubernetes' rule for an env var name (validation.IsEnvVarName): letters, digits, `_`, `-`, `.`, not a digit first. */
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
/** resource.Quantity's text: a signed decimal number, then a binary or decimal suffix or an exponent. */
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;
const SUFFIX: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A quantity's value as a number (`500m` → 0.5, `1Gi` → 1073741824), or undefined when it is not one. */
export function quantityValue(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const m = QUANTITY.exec(value);
  if (!m) return undefined;
  const suffix = m[2] ?? '';
  const scale = /^[eE]/.test(suffix) ? 10 ** Number(suffix.slice(1)) : (SUFFIX[suffix] ?? 1);
  return Number(m[1]) * scale;
}

function containerProblems(c: unknown, at: PodFieldPath, names: Map<string, PodFieldPath>): PodSpecProblem[] {
  const out: PodSpecProblem[] = [];
  const error = (field: PodFieldPath, problem: string, remedy: string) =>
    out.push({ severity: 'error', field, problem, remedy });
  if (!isMap(c)) {
    error(at, 'is not a mapping', 'write the container as name, image, ... under a list item');
    return out;
  }
  if (typeof c.name !== 'string' || c.name === '')
    error([...at, 'name'], 'is missing', 'give the container a name (a DNS label such as check)');
  else if (c.name.length > 63 || !DNS1123_LABEL.test(c.name))
    error(
      [...at, 'name'],
      `${JSON.stringify(c.name)} is not a DNS label`,
      'use lower-case letters, digits and "-"',
    );
  else if (names.has(c.name))
    error(
      [...at, 'name'],
      `${JSON.stringify(c.name)} is also the name of ${formatField(names.get(c.name) ?? [])}`,
      'give each container of the pod its own name',
    );
  else names.set(c.name, at);
  if (typeof c.image !== 'string' || c.image.trim() === '')
    error([...at, 'image'], 'is missing', 'give the container its image, such as node:20-alpine');
  if (c.imagePullPolicy !== undefined && !(PULL_POLICIES as readonly unknown[]).includes(c.imagePullPolicy))
    error(
      [...at, 'imagePullPolicy'],
      `${JSON.stringify(c.imagePullPolicy)} is not a pull policy`,
      `use one of ${PULL_POLICIES.join(', ')} (or leave it out)`,
    );
  for (const key of ['command', 'args'] as const) {
    const v = c[key];
    if (v !== undefined && !(Array.isArray(v) && v.every((a) => typeof a === 'string')))
      error([...at, key], 'is not a list of strings', `write it as a list: ${key}: ["node", "check.js"]`);
  }
  out.push(...envProblems(c.env, [...at, 'env']), ...resourceProblems(c.resources, [...at, 'resources']));
  if (c.ports !== undefined) {
    (Array.isArray(c.ports) ? c.ports : []).forEach((p, i) => {
      const port = isMap(p) ? p.containerPort : undefined;
      if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535)
        error(
          [...at, 'ports', i, 'containerPort'],
          `${JSON.stringify(port)} is not a port`,
          'use 1 to 65535',
        );
    });
  }
  return out;
}

function envProblems(env: unknown, at: PodFieldPath): PodSpecProblem[] {
  if (env === undefined || env === null) return [];
  if (!Array.isArray(env))
    return [
      {
        severity: 'error',
        field: at,
        problem: 'is not a list',
        remedy: 'write each variable as - name: X, value: "..."',
      },
    ];
  const out: PodSpecProblem[] = [];
  const seen = new Set<string>();
  env.forEach((e, i) => {
    const name = isMap(e) ? e.name : undefined;
    if (typeof name !== 'string' || name === '')
      out.push({
        severity: 'error',
        field: [...at, i, 'name'],
        problem: 'is missing',
        remedy: 'give the variable a name',
      });
    else if (!ENV_NAME.test(name))
      out.push({
        severity: 'error',
        field: [...at, i, 'name'],
        problem: `${JSON.stringify(name)} is not a variable name`,
        remedy: 'use letters, digits, "_", "-" and ".", not a digit first',
      });
    else if (seen.has(name))
      out.push({
        severity: 'warning',
        field: [...at, i, 'name'],
        problem: `${JSON.stringify(name)} is set twice`,
        remedy: 'keep one: the last one wins',
      });
    else seen.add(name);
    if (isMap(e) && e.value !== undefined && e.valueFrom !== undefined)
      out.push({
        severity: 'error',
        field: [...at, i],
        problem: 'has both value and valueFrom',
        remedy: 'keep one of them',
      });
  });
  return out;
}

function resourceProblems(resources: unknown, at: PodFieldPath): PodSpecProblem[] {
  if (!isMap(resources)) return [];
  const out: PodSpecProblem[] = [];
  const values: Record<'limits' | 'requests', Record<string, number>> = { limits: {}, requests: {} };
  for (const kind of ['limits', 'requests'] as const) {
    const map = resources[kind];
    if (map === undefined || map === null) continue;
    if (!isMap(map)) {
      out.push({
        severity: 'error',
        field: [...at, kind],
        problem: 'is not a mapping',
        remedy: 'write cpu: 100m, memory: 64Mi',
      });
      continue;
    }
    for (const [name, raw] of Object.entries(map)) {
      const value = quantityValue(raw);
      if (value === undefined || value < 0)
        out.push({
          severity: 'error',
          field: [...at, kind, name],
          problem: `${JSON.stringify(raw)} is not a quantity`,
          remedy: 'write a number with an optional unit, such as 100m, 0.5, 64Mi or 1G',
        });
      else values[kind][name] = value;
    }
  }
  for (const [name, request] of Object.entries(values.requests)) {
    const limit = values.limits[name];
    if (limit !== undefined && request > limit)
      out.push({
        severity: 'error',
        field: [...at, 'requests', name],
        problem: `is more than limits.${name}`,
        remedy: 'a request must be at most its limit',
      });
  }
  return out;
}

function formatField(path: PodFieldPath): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/**
 * The problems of a checker pod's spec at `at` (the PodSpec itself: a khcheck's spec.podSpec, a
 * HealthCheck's spec.podSpec.spec): at least one container, each (init containers too) with a unique DNS-label name, an
 * image, a known pull policy, command and args as lists of strings, env names Kubernetes accepts, resource
 * quantities that parse and requests within limits, ports in range; the pod's restartPolicy a known one
 * (khrun, like v2, runs every checker pod with Never whatever it says, so Always is no problem here; khrun
 * convert reports it when it matters, for v3).
 */
export function podSpecProblems(podSpec: unknown, at: PodFieldPath): PodSpecProblem[] {
  if (!isMap(podSpec)) return [];
  const out: PodSpecProblem[] = [];
  const names = new Map<string, PodFieldPath>();
  const containers = podSpec.containers;
  if (
    containers === undefined ||
    containers === null ||
    (Array.isArray(containers) && containers.length === 0)
  )
    out.push({
      severity: 'error',
      field: [...at, 'containers'],
      problem: podSpec.image === undefined ? 'is missing or empty' : 'is missing, and image is set beside it',
      remedy: 'give at least one container in the list: containers: [{name: check, image: ...}]',
    });
  for (const key of ['containers', 'initContainers'] as const) {
    const list = podSpec[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      out.push({
        severity: 'error',
        field: [...at, key],
        problem: 'is not a list',
        remedy: 'write each container as a list item (- name: ...)',
      });
      continue;
    }
    list.forEach((c, i) => {
      out.push(...containerProblems(c, [...at, key, i], names));
    });
  }
  const restart = podSpec.restartPolicy;
  if (restart !== undefined && !(RESTART_POLICIES as readonly unknown[]).includes(restart))
    out.push({
      severity: 'error',
      field: [...at, 'restartPolicy'],
      problem: `${JSON.stringify(restart)} is not a restart policy`,
      remedy: 'use Never (khrun runs every checker pod with Never), or leave it out',
    });
  return out;
}
