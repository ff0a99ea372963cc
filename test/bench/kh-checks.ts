import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonObject } from '../../lib/convert/field-path.ts';
import { toHealthCheck } from '../../lib/convert/to-healthcheck.ts';
import { inNamespace, type ManifestObject } from '../compat/v2-manifests.ts';

/** The checks each actor runs, one namespace each. */
export const CHECK_KINDS = ['test-check', 'pod-status', 'exit-3'] as const;
export type CheckKind = (typeof CHECK_KINDS)[number];
/** Checks whose checker reports at once; exit-3 never reports. */
export const INSTANT_KINDS: readonly CheckKind[] = ['test-check', 'pod-status'];

export interface CheckTimes {
  /** Every check's runInterval: the peers' schedule, and the interval khrun's Jobs are fired on. */
  runInterval: string;
  /** Timeout of the check whose checker exits 3 without reporting: what Kuberhealthy waits. */
  exitTimeout: string;
}

interface Source {
  yaml?: string;
  check: string;
  env?: Record<string, string>;
  timeout?: (t: CheckTimes) => string;
}

const SOURCES: Record<CheckKind, Source> = {
  // test-check's own YAML delays its report 5 s; an instant check reports at once.
  'test-check': { yaml: 'cmd/test-check/khcheck.yaml', check: 'kh-test-check', env: { REPORT_DELAY: '0s' } },
  'pod-status': { yaml: 'cmd/pod-status-check/pod-status-check.yaml', check: 'pod-status' },
  'exit-3': { check: 'exit-3', timeout: (t) => t.exitTimeout },
};

export const checkName = (kind: CheckKind): string => SOURCES[kind].check;

/** A checker that exits 3 at once without reporting (the host's node: pods run as local processes). */
function exitCheck(namespace: string): ManifestObject {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: 'exit-3', namespace },
    spec: {
      runInterval: '10m',
      timeout: '2m',
      podSpec: {
        containers: [
          { name: 'main', image: 'node:20-alpine', command: [process.execPath, '-e', 'process.exit(3)'] },
        ],
      },
    },
  };
}

/**
 * The khcheck of a kind and the objects its YAML ships with it (its RBAC), moved into `namespace`, from
 * Kuberhealthy v2.7.1's own YAMLs in the module; changed only in runInterval, timeout where the kind says,
 * and test-check's REPORT_DELAY. As `healthcheck`, the khcheck is converted to a v3 HealthCheck by khrun's
 * converter (lib/convert), the rest unchanged.
 */
export async function checkObjects(opts: {
  moduleDir: string;
  kind: CheckKind;
  namespace: string;
  times: CheckTimes;
  as: 'khcheck' | 'healthcheck';
}): Promise<ManifestObject[]> {
  const source = SOURCES[opts.kind];
  const objects = source.yaml
    ? inNamespace(await readFile(join(opts.moduleDir, source.yaml), 'utf8'), opts.namespace).objects
    : [exitCheck(opts.namespace)];
  const env = source.env ?? {};
  const out: ManifestObject[] = [];
  for (const o of objects) {
    if (o.kind !== 'KuberhealthyCheck') {
      out.push(o);
      continue;
    }
    if (o.metadata?.name !== source.check) continue;
    const spec = o.spec as {
      runInterval: string;
      timeout: string;
      podSpec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> };
    };
    spec.runInterval = opts.times.runInterval;
    if (source.timeout) spec.timeout = source.timeout(opts.times);
    for (const e of spec.podSpec.containers[0]?.env ?? []) if (e.name in env) e.value = env[e.name];
    if (opts.as === 'khcheck') {
      out.push(o);
      continue;
    }
    const converted = toHealthCheck(o as JsonObject, 'khcheck');
    if (!converted.ok)
      throw new Error(`${opts.kind}: the khcheck did not convert: ${JSON.stringify(converted.problems)}`);
    out.push(converted.output as ManifestObject);
  }
  if (!out.some((o) => o.kind === 'KuberhealthyCheck' || o.kind === 'HealthCheck'))
    throw new Error(`${source.yaml ?? opts.kind} holds no khcheck ${source.check}`);
  return out;
}
