import { type Converted, RESOURCE_KEYS } from './converted.ts';
import { DEFAULT_RUN_INTERVAL, durationField, V2_DEFAULT_TIMEOUT } from './durations.ts';
import { isObject, type JsonObject } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';
import { apiVersionOf, CHECK_KINDS } from './kinds.ts';
import { convertMetadata } from './metadata.ts';
import { podSpecField } from './pod-spec.ts';
import { writeNeverRestart } from './restart-policy.ts';
import { stringMapField } from './string-map.ts';
import { dropV3OnlyPodFields } from './v3-only-pod-fields.ts';

const SPEC_KEYS = {
  khcheck: ['runInterval', 'timeout', 'podSpec', 'extraAnnotations', 'extraLabels'],
  khjob: ['phase', 'timeout', 'podSpec', 'extraAnnotations', 'extraLabels'],
} as const;

/**
 * A v2.7.1 khcheck or khjob as a v3.0.0 HealthCheck. The PodSpec moves under podSpec.spec; durations keep
 * their text; v2's defaults (timeout 5m, interval 10m) and its forced restartPolicy Never are written
 * explicitly; extraLabels and extraAnnotations stay where they are (v3.0.0's CRD prunes podSpec.metadata,
 * so that is never written); a khjob becomes `singleRunOnly: true`.
 */
export function toHealthCheck(doc: JsonObject, from: 'khcheck' | 'khjob'): Converted {
  const source = CHECK_KINDS[from].kind;
  const problems: InputProblem[] = [];
  const meta = convertMetadata(doc.metadata);
  problems.push(...meta.problems);
  const findings: Finding[] = [...meta.findings];
  for (const key of Object.keys(doc).filter((k) => !RESOURCE_KEYS.includes(k)))
    findings.push({ effect: 'lost', field: [key], reason: `not a field of a ${source}` });
  const spec = doc.spec;
  if (!isObject(spec))
    return {
      ok: false,
      problems: [
        ...problems,
        { field: ['spec'], problem: 'is missing or not a mapping', remedy: 'give the check its spec' },
      ],
    };
  for (const key of Object.keys(spec).filter((k) => !(SPEC_KEYS[from] as readonly string[]).includes(k)))
    findings.push({
      effect: 'lost',
      field: ['spec', key],
      reason: `not a field of ${source} (v2.7.1) nor of HealthCheck: the API server would have pruned it`,
    });

  const out: JsonObject = {};
  if (from === 'khjob') {
    out.singleRunOnly = true;
    findings.push({
      effect: 'note',
      field: ['kind'],
      reason:
        "written as singleRunOnly: true, as v3's guide says; v3.0.0's controller does not read that field and runs the check every runInterval (10m)",
    });
    if (typeof spec.phase === 'string' && spec.phase !== '')
      findings.push({
        effect: 'lost',
        field: ['spec', 'phase'],
        reason: `v3 has no phase: this khjob is ${spec.phase}, and the HealthCheck will run it again`,
      });
  } else {
    const interval = durationField(spec.runInterval, ['spec', 'runInterval']);
    if ('problem' in interval) problems.push(interval.problem);
    else if (interval.text !== undefined) out.runInterval = interval.text;
    else {
      out.runInterval = DEFAULT_RUN_INTERVAL;
      findings.push({
        effect: 'defaulted',
        field: ['spec', 'runInterval'],
        value: DEFAULT_RUN_INTERVAL,
        reason: "unset: v2 ran it every 10m; written so v3's configurable default does not decide",
      });
    }
  }
  const timeout = durationField(spec.timeout, ['spec', 'timeout']);
  if ('problem' in timeout) problems.push(timeout.problem);
  else if (timeout.text !== undefined) out.timeout = timeout.text;
  else {
    out.timeout = V2_DEFAULT_TIMEOUT;
    findings.push({
      effect: 'defaulted',
      field: ['spec', 'timeout'],
      value: V2_DEFAULT_TIMEOUT,
      reason: 'unset: v2 gave the check 5m; v3 would give it 30s',
    });
  }
  for (const key of ['extraAnnotations', 'extraLabels'] as const) {
    const map = stringMapField(spec[key], ['spec', key]);
    if ('problem' in map) problems.push(map.problem);
    else if (map.map) out[key] = map.map;
  }
  const pod = podSpecField(spec.podSpec, ['spec', 'podSpec'], {
    misplaced: {
      key: 'spec',
      hint: `a ${source}'s podSpec is the PodSpec itself: move the fields under spec.podSpec.spec up one level`,
    },
  });
  if ('problems' in pod) problems.push(...pod.problems);
  else {
    // Fields v2.7.1's schema lacks were pruned from the stored khcheck: v2 never used them, and carried into
    // a HealthCheck they would start to count (a container's restartPolicy: Always is one in v2.7.1's own cmd/).
    findings.push(...dropV3OnlyPodFields(pod.pod, ['spec', 'podSpec'], 'to-v3'));
    findings.push(...writeNeverRestart(pod.pod, ['spec', 'podSpec'], 'v3'));
    out.podSpec = { spec: pod.pod };
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    output: {
      apiVersion: apiVersionOf('healthcheck'),
      kind: CHECK_KINDS.healthcheck.kind,
      metadata: meta.metadata,
      spec: out,
    },
    findings,
  };
}
