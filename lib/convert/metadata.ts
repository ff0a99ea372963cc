import { type FieldPath, isObject, type JsonObject } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';
import { stringMapField } from './string-map.ts';

/** Annotations that describe the source object rather than the check: not carried over. */
const SOURCE_ANNOTATIONS = [
  // kubectl apply's record of the source object; carried over, the next apply would diff against it.
  'kubectl.kubernetes.io/last-applied-configuration',
];
/** khrun's run bookkeeping (run, lease, history, owner markers) belongs to the resource it was written on. */
const KHRUN_PREFIX = 'khrun.dev/';
/** Kuberhealthy v3's finalizer, which its controller adds to every HealthCheck it sees. */
const KUBERHEALTHY_FINALIZER_PREFIX = 'kuberhealthy.io/';

/**
 * The metadata a converted resource keeps: name (or generateName), namespace, labels and annotations.
 * Server-set fields (uid, resourceVersion, generation, timestamps, managedFields) are dropped without a
 * word; owner references and foreign finalizers are user intent that cannot follow (they name a uid, or a
 * controller of the source), so they are reported as lost.
 */
export function convertMetadata(metadata: unknown): {
  metadata: JsonObject;
  findings: Finding[];
  problems: InputProblem[];
} {
  const findings: Finding[] = [];
  const problems: InputProblem[] = [];
  const out: JsonObject = {};
  if (metadata === undefined || metadata === null) return { metadata: out, findings, problems };
  const at = (key: string): FieldPath => ['metadata', key];
  if (!isObject(metadata)) {
    problems.push({
      field: ['metadata'],
      problem: 'is not a mapping',
      remedy: 'give metadata name and namespace',
    });
    return { metadata: out, findings, problems };
  }
  for (const key of ['name', 'generateName', 'namespace'] as const) {
    const value = metadata[key];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string') out[key] = value;
    else
      problems.push({
        field: at(key),
        problem: `is ${JSON.stringify(value)}, not a string`,
        remedy: 'quote it',
      });
  }
  const labels = stringMapField(metadata.labels, at('labels'));
  if ('problem' in labels) problems.push(labels.problem);
  else if (labels.map) out.labels = labels.map;
  const annotations = stringMapField(metadata.annotations, at('annotations'));
  if ('problem' in annotations) problems.push(annotations.problem);
  else if (annotations.map) {
    const kept = Object.fromEntries(
      Object.entries(annotations.map).filter(
        ([key]) => !SOURCE_ANNOTATIONS.includes(key) && !key.startsWith(KHRUN_PREFIX),
      ),
    );
    if (Object.keys(kept).length > 0) out.annotations = kept;
  }
  if (Array.isArray(metadata.ownerReferences) && metadata.ownerReferences.length > 0)
    findings.push({
      effect: 'lost',
      field: at('ownerReferences'),
      reason:
        'an owner reference names its owner by uid and belongs to the source object; set it on the new one',
    });
  if (Array.isArray(metadata.finalizers)) {
    metadata.finalizers.forEach((finalizer, i) => {
      if (typeof finalizer === 'string' && finalizer.startsWith(KUBERHEALTHY_FINALIZER_PREFIX)) return;
      findings.push({
        effect: 'lost',
        field: [...at('finalizers'), i],
        reason: "a finalizer is its controller's promise about the source object, not part of the check",
      });
    });
  }
  return { metadata: out, findings, problems };
}
