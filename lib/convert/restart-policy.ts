import type { FieldPath, JsonObject } from './field-path.ts';
import type { Finding } from './findings.ts';

/**
 * v2.7.1 runs every checker pod with restartPolicy Never whatever the podSpec says
 * (pkg/checks/external/main.go); v3.0.0 uses the podSpec as written, and a pod's default is Always, so a
 * checker that exits would be started again. Both directions therefore write Never: the behaviour v2 had,
 * made visible. `pod` is mutated; `at` is the input's path to the PodSpec.
 */
export function writeNeverRestart(pod: JsonObject, at: FieldPath, to: 'v2' | 'v3'): Finding[] {
  const current = pod.restartPolicy;
  if (current === 'Never') return [];
  pod.restartPolicy = 'Never';
  const field = [...at, 'restartPolicy'];
  if (current === undefined || current === null)
    return [
      {
        effect: 'defaulted',
        field,
        value: 'Never',
        reason:
          to === 'v3'
            ? 'unset: v2 ran the checker pod with Never; v3.0.0 would leave the default, Always, and restart a checker that exits'
            : "unset: v3.0.0 would leave the pod's default, Always; v2 always runs Never, so it is written",
      },
    ];
  return [
    {
      effect: 'changed',
      field,
      value: 'Never',
      reason:
        to === 'v3'
          ? `${JSON.stringify(current)} was never used: v2 runs every checker pod with Never`
          : `${JSON.stringify(current)} cannot be kept: v2 runs every checker pod with Never`,
    },
  ];
}
