import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { JsonObject } from '../../lib/convert/field-path.ts';
import { toHealthCheck } from '../../lib/convert/to-healthcheck.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../../lib/state/resources.ts';
import { inNamespace, type ManifestObject } from '../compat/v2-manifests.ts';
import { openToCheckerCredentials, scaleNamespace } from './scale-setup.ts';

/** Checks per namespace in the fleet beside Kuberhealthy v3 (a team's namespace holds a few dozen). */
export const FLEET_CHECKS_PER_NAMESPACE = 25;

/** What each check is: long enough a timeout that a pod the one local node starts late is not cut off. */
export const FLEET_CHECK = { runInterval: '1h', timeout: '10m', reportDelay: '0s' } as const;

export type FleetSystem = 'khrun' | 'v3';

/** The namespaces of one row: `fv3-<system>-<n>-<i>`, FLEET_CHECKS_PER_NAMESPACE checks each (c0, c1, ...). */
export function fleetRowNamespaces(
  system: FleetSystem,
  n: number,
): Array<{ namespace: string; checks: number }> {
  return Array.from({ length: Math.ceil(n / FLEET_CHECKS_PER_NAMESPACE) }, (_, i) => ({
    namespace: `fv3-${system === 'khrun' ? 'k' : 'v'}-${n}-${i}`,
    checks: Math.min(FLEET_CHECKS_PER_NAMESPACE, n - i * FLEET_CHECKS_PER_NAMESPACE),
  }));
}

/**
 * The check: Kuberhealthy v2.7.1's own test-check khcheck (cmd/test-check/khcheck.yaml of the module),
 * changed only in name, namespace, runInterval, timeout and REPORT_DELAY (reports at once); for v3, the
 * same khcheck converted to a HealthCheck by khrun's converter.
 */
export async function fleetCheck(
  moduleDir: string,
  as: 'khcheck' | 'healthcheck',
): Promise<(namespace: string, name: string) => ManifestObject> {
  const text = await readFile(join(moduleDir, 'cmd/test-check/khcheck.yaml'), 'utf8');
  return (namespace, name) => {
    const [khcheck] = inNamespace(text, namespace).objects.filter((o) => o.kind === 'KuberhealthyCheck');
    if (!khcheck) throw new Error('cmd/test-check/khcheck.yaml holds no khcheck');
    khcheck.metadata = { ...khcheck.metadata, name, namespace };
    const spec = khcheck.spec as {
      runInterval: string;
      timeout: string;
      podSpec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> };
    };
    spec.runInterval = FLEET_CHECK.runInterval;
    spec.timeout = FLEET_CHECK.timeout;
    for (const e of spec.podSpec.containers[0]?.env ?? [])
      if (e.name === 'REPORT_DELAY') e.value = FLEET_CHECK.reportDelay;
    if (as === 'khcheck') return khcheck;
    const converted = toHealthCheck(khcheck as JsonObject, 'khcheck');
    if (!converted.ok) throw new Error(`test-check did not convert: ${JSON.stringify(converted.problems)}`);
    return converted.output as ManifestObject;
  };
}

/** Creates a row's namespaces and checks (20 creates in flight). */
export async function createFleetRow(
  kc: KubeConfig,
  moduleDir: string,
  system: FleetSystem,
  n: number,
): Promise<Set<string>> {
  const as = system === 'khrun' ? 'khcheck' : 'healthcheck';
  const make = await fleetCheck(moduleDir, as);
  const co =
    as === 'khcheck'
      ? { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL }
      : { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
  const custom = kc.makeApiClient(CustomObjectsApi);
  const rows = fleetRowNamespaces(system, n);
  for (const { namespace } of rows) {
    await scaleNamespace(kc, namespace);
    await openToCheckerCredentials(kc, namespace);
  }
  const objects = rows.flatMap(({ namespace, checks }) =>
    Array.from({ length: checks }, (_, i) => make(namespace, `c${i}`)),
  );
  for (let i = 0; i < objects.length; i += 20)
    await Promise.all(
      objects
        .slice(i, i + 20)
        .map((body) =>
          custom.createNamespacedCustomObject({ ...co, namespace: body.metadata?.namespace ?? '', body }),
        ),
    );
  return new Set(rows.map((r) => r.namespace));
}
