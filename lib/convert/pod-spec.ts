import { podSpecProblems } from '../check/pod-sanity.ts';
import { cloneJson, type FieldPath, isObject, type JsonObject } from './field-path.ts';
import type { InputProblem } from './findings.ts';

/**
 * The PodSpec at `at`, copied: a mapping with at least one container and none of the errors the API
 * server would refuse it for (lib/check/pod-sanity.ts: a container without an image, an unknown
 * imagePullPolicy, ...), else the problems. `misplaced` names
 * the key whose presence means the other version's podSpec shape was written (v3's wrapper in a khcheck,
 * v2's bare PodSpec in a HealthCheck: the mistake v3's own CRD reference warns about).
 */
export function podSpecField(
  value: unknown,
  at: FieldPath,
  shape: { misplaced?: { key: string; hint: string } },
): { pod: JsonObject } | { problems: InputProblem[] } {
  const shaped = podShape(value, at, shape);
  if ('problem' in shaped) return { problems: [shaped.problem] };
  const errors = podSpecProblems(shaped.pod, at).filter((p) => p.severity === 'error');
  if (errors.length > 0)
    return { problems: errors.map(({ field, problem, remedy }) => ({ field, problem, remedy })) };
  return shaped;
}

function podShape(
  value: unknown,
  at: FieldPath,
  shape: { misplaced?: { key: string; hint: string } },
): { pod: JsonObject } | { problem: InputProblem } {
  if (!isObject(value))
    return {
      problem: {
        field: at,
        problem: value === undefined ? 'is missing' : 'is not a mapping',
        remedy: 'give the checker pod (containers, serviceAccountName, ...)',
      },
    };
  const containers = value.containers;
  if (containers !== undefined && containers !== null && !Array.isArray(containers))
    return {
      problem: {
        field: [...at, 'containers'],
        problem: 'is not a list (the API server refuses such a pod)',
        remedy: 'write each container as a list item (- name: ...)',
      },
    };
  if (!Array.isArray(containers) || containers.length === 0) {
    const misplaced = shape.misplaced && value[shape.misplaced.key] !== undefined;
    const bareContainer = value.image !== undefined;
    return {
      problem: {
        field: [...at, 'containers'],
        problem: misplaced
          ? `is missing, and ${shape.misplaced?.key} is set`
          : bareContainer
            ? 'is missing, and image is set beside it'
            : 'is missing or empty',
        remedy: misplaced
          ? (shape.misplaced?.hint ?? '')
          : bareContainer
            ? 'a container goes in the containers list (containers: [{name, image, ...}])'
            : 'give at least one container',
      },
    };
  }
  return { pod: cloneJson(value) };
}
