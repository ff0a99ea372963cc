import { KIND_NAMES, type KindName } from '../core/run-target.ts';
import { ConfigError } from './config-error.ts';

/** What a runCheck invocation runs: a v2 khcheck, a v2 khjob (once) or a Kuberhealthy v3 HealthCheck. */
const RUN_KINDS = KIND_NAMES;
type RunKind = KindName;

/**
 * The runCheck Lambda's event: from the tick, the trigger, a schedule rule's input or `aws lambda invoke`.
 * checkName is the object's name whatever its kind; without kind it is a khcheck's (the event's shape
 * before khjobs and HealthCheck runs, which schedule files still hold).
 */
export interface RunCheckEvent {
  kind?: RunKind;
  checkName: string;
  namespace: string;
  /** The cluster to run it in, one of the function's KHRUN_CLUSTERS; absent: the function's own cluster. */
  cluster?: string;
}

/** The event's fields as `khrun run`'s flags: kind picks --check, --job or --healthcheck for checkName. */
export type RunEventFlags = {
  /** The event's cluster (lambda-fleet.ts checks it against KHRUN_CLUSTERS). */
  cluster?: string;
  check?: string;
  job?: string;
  healthcheck?: string;
  namespace?: string;
};

const FIELDS = ['kind', 'checkName', 'namespace', 'cluster'] as const;
const FLAG_OF_KIND = { khcheck: 'check', khjob: 'job', healthcheck: 'healthcheck' } as const;
const EXAMPLE = '{"kind": "healthcheck", "checkName": "NAME", "namespace": "NS"}';

/** The event field a flag came from, so a bad value's message names the field the invoker wrote. */
export function eventFieldOf(flag: string): string | undefined {
  if (flag === 'namespace') return '"namespace" in the event';
  if (flag === 'cluster') return '"cluster" in the event';
  return flag in { check: 1, job: 1, healthcheck: 1 } ? '"checkName" in the event' : undefined;
}

function refuse(field: string, value: unknown, problem: string): never {
  throw new ConfigError({
    setting: field === '' ? 'the event' : `"${field}" in the event`,
    value: JSON.stringify(value),
    problem,
    remedy: `invoke with ${EXAMPLE} (kind: ${RUN_KINDS.join(', ')}; default khcheck)`,
  });
}

/**
 * The runCheck event, checked before anything else is done: an object of kind, checkName and namespace,
 * each a string, kind one of RUN_KINDS. An unknown field is refused rather than ignored, so a misspelt
 * one cannot run the wrong object; EventBridge's own scheduled event (a rule without input) names nothing,
 * and CHECK_NAME and the like then decide, as for `khrun run`. Pure.
 */
export function runEventFlags(event: unknown): RunEventFlags {
  if (event === undefined || event === null) return {};
  if (typeof event !== 'object' || Array.isArray(event)) refuse('', event, 'must be a JSON object');
  const fields = event as Record<string, unknown>;
  if ('detail-type' in fields && 'source' in fields) return {};
  const unknown = Object.keys(fields).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown.length)
    refuse(unknown[0]!, fields[unknown[0]!], `is not a field of the runCheck event (${FIELDS.join(', ')})`);
  for (const field of FIELDS) {
    const value = fields[field];
    if (value !== undefined && value !== null && typeof value !== 'string')
      refuse(field, value, 'must be a string');
  }
  const kind = (fields.kind ?? 'khcheck') as string;
  if (!(RUN_KINDS as readonly string[]).includes(kind))
    refuse('kind', kind, `names no kind khrun runs (${RUN_KINDS.join(', ')})`);
  const name = fields.checkName as string | undefined | null;
  if (fields.kind != null && (name == null || name.trim() === ''))
    refuse('checkName', name ?? null, `is required with "kind": the ${kind}'s name`);
  const flags: RunEventFlags = {};
  if (name != null) flags[FLAG_OF_KIND[kind as RunKind]] = name;
  if (fields.cluster != null) flags.cluster = fields.cluster as string;
  if (fields.namespace != null) flags.namespace = fields.namespace as string;
  return flags;
}

/**
 * A batch event's list, `{"checks": [...]}` (lib/config/batch-checks.ts checks the entries), else undefined
 * for one object's event. A batch event holds nothing else: a checkName beside checks would be ambiguous.
 * Pure.
 */
export function batchEventChecks(event: unknown): unknown {
  if (typeof event !== 'object' || event === null || Array.isArray(event) || !('checks' in event))
    return undefined;
  const other = Object.keys(event).find((k) => k !== 'checks' && k !== 'cluster');
  if (other !== undefined)
    refuse(
      other,
      (event as Record<string, unknown>)[other],
      'does not go with "checks": a batch event holds the list (and its cluster) only',
    );
  return (event as { checks: unknown }).checks;
}

/** A batch event's cluster (`{"cluster": "prod", "checks": [...]}`), a string when given. Pure. */
export function batchEventCluster(event: unknown): string | undefined {
  const cluster = (event as { cluster?: unknown }).cluster;
  if (cluster === undefined || cluster === null) return undefined;
  if (typeof cluster !== 'string') refuse('cluster', cluster, 'must be a string');
  return cluster;
}
