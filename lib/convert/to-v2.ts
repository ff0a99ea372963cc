import { type Converted, RESOURCE_KEYS } from './converted.ts';
import { DEFAULT_RUN_INTERVAL, durationField, V3_DEFAULT_TIMEOUT } from './durations.ts';
import { isObject, type JsonObject } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';
import { apiVersionOf, CHECK_KINDS } from './kinds.ts';
import { convertMetadata } from './metadata.ts';
import { podMetadataToExtra } from './pod-metadata.ts';
import { podSpecField } from './pod-spec.ts';
import { writeNeverRestart } from './restart-policy.ts';
import { stringMapField } from './string-map.ts';
import { dropV3OnlyPodFields } from './v3-only-pod-fields.ts';

const SPEC_KEYS = ['singleRunOnly', 'runInterval', 'timeout', 'extraAnnotations', 'extraLabels', 'podSpec'];
const POD_KEYS = ['metadata', 'spec'];

/**
 * A v3.0.0 HealthCheck as a v2.7.1 khcheck, or as a khjob when it is `singleRunOnly`. podSpec.spec becomes
 * podSpec; podSpec.metadata's labels and annotations join extraLabels and extraAnnotations (v3 puts both
 * on the pod, extra* last); v3's defaults (timeout 30s, interval 10m) are written explicitly; PodSpec
 * fields v2.7.1's schema lacks, and a run-once check's interval, are reported lost.
 */
export function toV2(doc: JsonObject): Converted {
  const problems: InputProblem[] = [];
  const meta = convertMetadata(doc.metadata);
  problems.push(...meta.problems);
  const findings: Finding[] = [...meta.findings];
  for (const key of Object.keys(doc).filter((k) => !RESOURCE_KEYS.includes(k)))
    findings.push({ effect: 'lost', field: [key], reason: 'not a field of a HealthCheck' });
  const spec = doc.spec;
  if (!isObject(spec))
    return {
      ok: false,
      problems: [
        ...problems,
        { field: ['spec'], problem: 'is missing or not a mapping', remedy: 'give the check its spec' },
      ],
    };
  for (const key of Object.keys(spec).filter((k) => !SPEC_KEYS.includes(k)))
    findings.push({
      effect: 'lost',
      field: ['spec', key],
      reason: 'not a field of HealthCheck (v3.0.0) nor of a khcheck: the API server would have pruned it',
    });

  const single = spec.singleRunOnly;
  if (single !== undefined && single !== null && typeof single !== 'boolean')
    problems.push({
      field: ['spec', 'singleRunOnly'],
      problem: `is ${JSON.stringify(single)}`,
      remedy: 'write true or false',
    });
  const to = single === true ? 'khjob' : 'khcheck';
  const out: JsonObject = {};
  const interval = durationField(spec.runInterval, ['spec', 'runInterval']);
  if ('problem' in interval) problems.push(interval.problem);
  else if (to === 'khjob') {
    if (interval.text !== undefined)
      findings.push({
        effect: 'lost',
        field: ['spec', 'runInterval'],
        reason: 'a khjob runs once; v2 has no interval for it',
      });
  } else if (interval.text !== undefined) out.runInterval = interval.text;
  else {
    out.runInterval = DEFAULT_RUN_INTERVAL;
    findings.push({
      effect: 'defaulted',
      field: ['spec', 'runInterval'],
      value: DEFAULT_RUN_INTERVAL,
      reason: "unset: v3's default is 10m, and a khcheck must name one",
    });
  }
  const timeout = durationField(spec.timeout, ['spec', 'timeout']);
  if ('problem' in timeout) problems.push(timeout.problem);
  else if (timeout.text !== undefined) out.timeout = timeout.text;
  else {
    out.timeout = V3_DEFAULT_TIMEOUT;
    findings.push({
      effect: 'defaulted',
      field: ['spec', 'timeout'],
      value: V3_DEFAULT_TIMEOUT,
      reason: 'unset: v3 gave the check 30s; v2 would give it 5m',
    });
  }
  const extra: Record<'extraAnnotations' | 'extraLabels', Record<string, string>> = {
    extraAnnotations: {},
    extraLabels: {},
  };
  for (const key of ['extraAnnotations', 'extraLabels'] as const) {
    const map = stringMapField(spec[key], ['spec', key]);
    if ('problem' in map) problems.push(map.problem);
    else extra[key] = map.map ?? {};
  }

  const wrapper = spec.podSpec;
  if (!isObject(wrapper)) {
    problems.push({
      field: ['spec', 'podSpec'],
      problem: wrapper === undefined ? 'is missing' : 'is not a mapping',
      remedy: 'give the checker pod under spec.podSpec.spec',
    });
  } else {
    for (const key of Object.keys(wrapper).filter((k) => !POD_KEYS.includes(k)))
      findings.push({
        effect: 'lost',
        field: ['spec', 'podSpec', key],
        reason: 'not a field of podSpec (metadata, spec)',
      });
    if (wrapper.spec === undefined && wrapper.containers !== undefined)
      problems.push({
        field: ['spec', 'podSpec', 'spec'],
        problem: 'is missing, and spec.podSpec.containers is set',
        remedy: 'in a HealthCheck the pod fields go under spec.podSpec.spec (v3 wraps the PodSpec)',
      });
    else {
      const pod = podSpecField(wrapper.spec, ['spec', 'podSpec', 'spec'], {});
      if ('problems' in pod) problems.push(...pod.problems);
      else {
        findings.push(...dropV3OnlyPodFields(pod.pod, ['spec', 'podSpec', 'spec'], 'to-v2'));
        findings.push(...writeNeverRestart(pod.pod, ['spec', 'podSpec', 'spec'], 'v2'));
        out.podSpec = pod.pod;
      }
    }
    const merged = podMetadataToExtra(wrapper.metadata, extra);
    if ('problem' in merged) problems.push(merged.problem);
    else findings.push(...merged.findings);
  }
  if (problems.length > 0) return { ok: false, problems };
  // In the order v2's own YAMLs write them; a khjob has no runInterval in `out`.
  const v2Spec: JsonObject = {};
  for (const key of ['runInterval', 'timeout'] as const) if (out[key] !== undefined) v2Spec[key] = out[key];
  for (const key of ['extraAnnotations', 'extraLabels'] as const)
    if (Object.keys(extra[key]).length > 0) v2Spec[key] = extra[key];
  if (out.podSpec !== undefined) v2Spec.podSpec = out.podSpec;
  return {
    ok: true,
    output: {
      apiVersion: apiVersionOf(to),
      kind: CHECK_KINDS[to].kind,
      metadata: meta.metadata,
      spec: v2Spec,
    },
    findings,
  };
}
