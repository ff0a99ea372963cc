import type { JsonObject } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';
import { CHECK_KINDS, classifyDocument } from './kinds.ts';
import type { SourceDocument } from './parse-documents.ts';
import { toHealthCheck } from './to-healthcheck.ts';
import { toV2 } from './to-v2.ts';

/**
 * What became of one input document:
 * - `converted`: a khcheck or khjob as a HealthCheck, or a HealthCheck as a khcheck or khjob;
 * - `kept`: another kind (a ServiceAccount, RBAC) copied as it is, so a manifest stays complete;
 * - `dropped`: a khstate: status, which v3 keeps in the HealthCheck and whoever runs the check writes;
 * - `invalid`: what is wrong with it, and nothing of it is written.
 */
export type DocumentResult = { origin: string; resource: string } & (
  | { kind: 'converted'; output: JsonObject; findings: Finding[] }
  | { kind: 'kept'; output: JsonObject }
  | { kind: 'dropped'; reason: string }
  | { kind: 'invalid'; problems: InputProblem[] }
);

/** `KuberhealthyCheck kuberhealthy/daemonset`, as far as the document names itself. */
export function describeResource(value: unknown): string {
  const doc = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const meta = (typeof doc.metadata === 'object' && doc.metadata !== null ? doc.metadata : {}) as Record<
    string,
    unknown
  >;
  const name =
    typeof meta.name === 'string'
      ? meta.name
      : typeof meta.generateName === 'string'
        ? `${meta.generateName}*`
        : undefined;
  const ns = typeof meta.namespace === 'string' ? `${meta.namespace}/` : '';
  const kind = typeof doc.kind === 'string' ? doc.kind : 'resource';
  return name === undefined ? `${kind} (no name)` : `${kind} ${ns}${name}`;
}

/** Converts one document by its kind; the direction follows from the kind. */
export function convertDocument(doc: SourceDocument): DocumentResult {
  const base = { origin: doc.origin, resource: describeResource(doc.value) };
  const kind = classifyDocument(doc.value);
  const value = doc.value as JsonObject;
  switch (kind.kind) {
    case 'malformed':
      return {
        ...base,
        kind: 'invalid',
        problems: [{ problem: kind.problem, remedy: 'give a Kubernetes resource' }],
      };
    case 'unknown-version':
      return {
        ...base,
        kind: 'invalid',
        problems: [
          {
            field: ['apiVersion'],
            problem: `is ${JSON.stringify(value.apiVersion)}, which no Kuberhealthy release serves`,
            remedy: `use ${kind.expected}`,
          },
        ],
      };
    case 'khstate':
      return {
        ...base,
        kind: 'dropped',
        reason:
          "a khstate is a check's last result; a HealthCheck keeps its own in status, written by whoever runs it",
      };
    case 'other':
      return { ...base, kind: 'kept', output: value };
    case 'check': {
      const converted = kind.check === 'healthcheck' ? toV2(value) : toHealthCheck(value, kind.check);
      return converted.ok
        ? { ...base, kind: 'converted', output: converted.output, findings: converted.findings }
        : { ...base, kind: 'invalid', problems: converted.problems };
    }
  }
}

/** The check kinds by name, for messages that list what convert reads. */
export const CHECK_KIND_NAMES = Object.values(CHECK_KINDS).map((k) => k.kind);
