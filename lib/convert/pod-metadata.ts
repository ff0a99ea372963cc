import { isObject } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';
import { stringMapField } from './string-map.ts';

const FIELDS = [
  ['labels', 'extraLabels'],
  ['annotations', 'extraAnnotations'],
] as const;

/**
 * A HealthCheck's spec.podSpec.metadata merged into `extra` (mutated), as v3.0.0 builds the pod: metadata
 * first, then extraLabels/extraAnnotations over it (internal/kuberhealthy CheckPodSpec). v2 has only the
 * extra maps, so each key moves there; a key extra* also sets never reached the pod under v3 and is lost.
 * (v3.0.0's CRD declares podSpec.metadata without properties, so the API server prunes it: this only
 * matters for HealthChecks read from files.)
 */
export function podMetadataToExtra(
  metadata: unknown,
  extra: Record<'extraLabels' | 'extraAnnotations', Record<string, string>>,
): { findings: Finding[] } | { problem: InputProblem } {
  const findings: Finding[] = [];
  if (metadata === undefined || metadata === null) return { findings };
  const at = ['spec', 'podSpec', 'metadata'];
  if (!isObject(metadata))
    return { problem: { field: at, problem: 'is not a mapping', remedy: 'give labels and annotations' } };
  for (const key of Object.keys(metadata).filter((k) => k !== 'labels' && k !== 'annotations'))
    findings.push({
      effect: 'lost',
      field: [...at, key],
      reason: 'a checker pod takes only labels and annotations from here',
    });
  for (const [from, to] of FIELDS) {
    const map = stringMapField(metadata[from], [...at, from]);
    if ('problem' in map) return map;
    for (const [key, value] of Object.entries(map.map ?? {})) {
      const field = [...at, from, key];
      const taken = extra[to][key];
      if (taken !== undefined && taken !== value) {
        findings.push({
          effect: 'lost',
          field,
          reason: `spec.${to} sets this key too, and v3 applies that one last`,
        });
        continue;
      }
      extra[to][key] = value;
      findings.push({
        effect: 'moved',
        field,
        to: ['spec', to, key],
        reason: `v2 puts a pod's ${from} only in ${to}`,
      });
    }
  }
  return { findings };
}
