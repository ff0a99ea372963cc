/** The kinds of object khrun runs: Kuberhealthy v2's khchecks and khjobs, and v3's HealthChecks. */
export const KIND_NAMES = ['khcheck', 'khjob', 'healthcheck'] as const;
export type KindName = (typeof KIND_NAMES)[number];

/**
 * One object to run, spelled the same way from configuration (a flag, a Lambda event, a trigger, the tick)
 * to the engine. The kind is looked up once, in the kind registry (lib/kinds/registry.ts).
 */
export interface RunTarget {
  kind: KindName;
  namespace: string;
  name: string;
}

/** How a target is named in logs, tick entries and results: `ns/name` for a khcheck, else `kind/ns/name`. */
export function targetLabel(t: RunTarget): string {
  return t.kind === 'khcheck' ? `${t.namespace}/${t.name}` : `${t.kind}/${t.namespace}/${t.name}`;
}
