import { type PodSpecProblem, podSpecProblems } from '../check/pod-sanity.ts';
import { validateCheck } from '../check/validate-check.ts';
import { type FieldPath, formatPath, isObject } from '../convert/field-path.ts';
import { type CheckKind, classifyDocument } from '../convert/kinds.ts';
import type { SourceDocument } from '../convert/parse-documents.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { validateHealthCheck } from '../healthcheck/validate.ts';
import { jobAsCheck, type KhJob } from '../job/khjob.ts';
import type { KhCheck } from '../state/resources.ts';

/** One thing wrong with a document: `error` makes it invalid (exit 1), `warning` does not. */
export interface ValidationProblem {
  severity: 'error' | 'warning';
  /** The field, as kubectl writes one (`spec.podSpec.containers[0].image`); absent: the whole document. */
  field?: string;
  message: string;
}

/** A document's verdict, with where it is and what it names. */
export interface ValidatedDocument {
  file: string;
  /** The document's number in its file (from 1), and the item's in a List. */
  document?: number;
  item?: number;
  kind?: string;
  namespace?: string;
  name?: string;
  /** `skipped`: not a check (a Deployment, RBAC, a khstate): nothing khrun runs. */
  result: 'valid' | 'invalid' | 'skipped';
  problems: ValidationProblem[];
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** The checker pod carries the check's name in a label (kuberhealthy-check-name), and a label value is at most 63. */
const MAX_CHECK_NAME = 63;

/** Stand-ins for what only the API server gives an object: the runner's validators require them. */
const OFFLINE_UID = 'offline-validation';
const DEFAULT_NAMESPACE = 'default';

const fromPod = (p: PodSpecProblem): ValidationProblem => ({
  severity: p.severity,
  field: formatPath(p.field),
  message: `${p.problem}; ${p.remedy}`,
});

function nameProblems(metadata: Record<string, unknown>): ValidationProblem[] {
  const name = metadata.name;
  if (typeof name !== 'string' || name === '')
    return [{ severity: 'error', field: 'metadata.name', message: 'is missing; give the check a name' }];
  if (!DNS1123_SUBDOMAIN.test(name))
    return [
      {
        severity: 'error',
        field: 'metadata.name',
        message: `${JSON.stringify(name)} is not an object name; use lower-case letters, digits, "-" and "."`,
      },
    ];
  if (name.length > MAX_CHECK_NAME)
    return [
      {
        severity: 'error',
        field: 'metadata.name',
        message: `is ${name.length} characters; the checker pod's label kuberhealthy-check-name holds it, and a label value is at most ${MAX_CHECK_NAME}`,
      },
    ];
  return [];
}

/**
 * The runner's own verdict (lib/check/validate-check.ts, lib/healthcheck/validate.ts) as it would record it
 * for this object, with the uid and namespace the API server would give it. Its pod-spec reasons name no
 * field, so they are left out when the pod-spec check found the same fault with its field.
 */
function runnerProblem(
  kind: CheckKind,
  value: Record<string, unknown>,
  podErrors: boolean,
): ValidationProblem[] {
  const metadata = isObject(value.metadata) ? value.metadata : {};
  const placed = {
    ...value,
    metadata: { namespace: DEFAULT_NAMESPACE, ...metadata, uid: OFFLINE_UID },
  };
  const verdict =
    kind === 'healthcheck'
      ? validateHealthCheck(placed as unknown as HealthCheck)
      : validateCheck(
          kind === 'khjob' ? jobAsCheck(placed as unknown as KhJob) : (placed as unknown as KhCheck),
        );
  if (verdict.ok || verdict.reason.startsWith('metadata.')) return [];
  const podSpecReason = /^(no containers found|no image found)/.test(verdict.reason);
  if (podSpecReason && podErrors) return [];
  const field = /^(spec(\.[A-Za-z]+)+) /.exec(verdict.reason)?.[1];
  const podField = kind === 'healthcheck' ? 'spec.podSpec.spec' : 'spec.podSpec';
  return [
    field
      ? { severity: 'error', field, message: verdict.reason.slice(field.length + 1) }
      : { severity: 'error', ...(podSpecReason ? { field: podField } : {}), message: verdict.reason },
  ];
}

const POD_SPEC_AT: Record<CheckKind, FieldPath> = {
  khcheck: ['spec', 'podSpec'],
  khjob: ['spec', 'podSpec'],
  healthcheck: ['spec', 'podSpec', 'spec'],
};

/**
 * Validates one document offline (pure): a khcheck, khjob or HealthCheck gets the runner's own validation
 * (durations, pod spec, label maps) plus the pod-spec checks of lib/check/pod-sanity.ts and a name the
 * checker pod can carry; a check kind under an unknown apiVersion, or a document that is no resource, is
 * invalid; every other kind (and a khstate) is skipped.
 */
export function validateDocument(file: string, doc: SourceDocument): ValidatedDocument {
  const base = {
    file,
    ...(doc.at ? { document: doc.at.document } : {}),
    ...(doc.at?.item !== undefined ? { item: doc.at.item } : {}),
  };
  const value = doc.value;
  const kind = classifyDocument(value);
  if (kind.kind === 'malformed')
    return {
      ...base,
      result: 'invalid',
      problems: [{ severity: 'error', message: `the document ${kind.problem}` }],
    };
  const object = value as Record<string, unknown>;
  const metadata = isObject(object.metadata) ? object.metadata : {};
  const named = {
    ...base,
    kind: String(object.kind),
    ...(typeof metadata.namespace === 'string' ? { namespace: metadata.namespace } : {}),
    ...(typeof metadata.name === 'string' ? { name: metadata.name } : {}),
  };
  if (kind.kind === 'unknown-version')
    return {
      ...named,
      result: 'invalid',
      problems: [
        {
          severity: 'error',
          field: 'apiVersion',
          message: `${JSON.stringify(object.apiVersion)} is served by no Kuberhealthy release; use ${kind.expected}`,
        },
      ],
    };
  if (kind.kind !== 'check') return { ...named, result: 'skipped', problems: [] };
  const spec = isObject(object.spec) ? object.spec : {};
  const podSpec =
    kind.check === 'healthcheck' ? (isObject(spec.podSpec) ? spec.podSpec.spec : undefined) : spec.podSpec;
  const pod = podSpecProblems(podSpec, POD_SPEC_AT[kind.check]).map(fromPod);
  const problems = [
    ...nameProblems(metadata),
    ...runnerProblem(
      kind.check,
      object,
      pod.some((p) => p.severity === 'error'),
    ),
    ...pod,
  ];
  return { ...named, result: problems.some((p) => p.severity === 'error') ? 'invalid' : 'valid', problems };
}
