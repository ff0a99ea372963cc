import type { V1ObjectMeta, V1PodSpec } from '@kubernetes/client-node';
import { KH_GROUP, KH_VERSION, type KhCheck } from '../state/resources.ts';

/** Kuberhealthy v2's run-once check (pkg/apis/khjob/v1): same group and version as khchecks. */
export const KHJOB_PLURAL = 'khjobs';
export const KHJOB_KIND = 'KuberhealthyJob';

/**
 * `spec.phase` as v2.7.1 writes it (khjobv1.JobRunning, JobCompleted): empty on a new khjob, `Running` once
 * a runner took it, `Completed` once its outcome is in the khstate. v2's monitor runs a khjob only while the
 * phase is empty, so a khjob is run once per object: re-running means deleting and re-applying it.
 */
export const JobPhase = { New: '', Running: 'Running', Completed: 'Completed' } as const;
export type JobPhase = (typeof JobPhase)[keyof typeof JobPhase];

/** `KuberhealthyJob` as v2.7.1 stores it: a khcheck without runInterval, plus the phase. */
export interface KhJob {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec: {
    phase?: string;
    timeout?: string;
    podSpec: V1PodSpec;
    extraAnnotations?: Record<string, string>;
    extraLabels?: Record<string, string>;
  };
}

/** The phase as stored; anything v2 would not write reads as new (v2 runs only on an empty phase). */
export function phaseOf(job: KhJob): JobPhase {
  const phase = job.spec?.phase ?? '';
  return phase === JobPhase.Running || phase === JobPhase.Completed ? phase : JobPhase.New;
}

/**
 * The run UUID of a khjob: its own uid. One khjob object is one run, so the run is named before it starts
 * and every invocation (the tick's, `khrun run --job`, the one adopting a killed run) names the same run;
 * the khstate's last outcome then says for certain whether this khjob already ran. A khjob deleted and
 * applied again is a new object with a new uid, hence a new run, as in v2.
 */
export function jobRunUuid(job: KhJob): string {
  return job.metadata.uid ?? '';
}

/**
 * The khjob as the khcheck the run engine validates and runs: the same pod spec, timeout and extras. A
 * khjob has no runInterval; the engine's default fills it and nothing reads it for a job.
 */
export function jobAsCheck(job: KhJob): KhCheck {
  const { phase: _phase, ...spec } = job.spec ?? ({} as KhJob['spec']);
  return {
    apiVersion: `${KH_GROUP}/${KH_VERSION}`,
    kind: KHJOB_KIND,
    metadata: job.metadata,
    spec: { ...spec, runInterval: '', timeout: spec.timeout ?? '' } as KhCheck['spec'],
  };
}

/** The khjob with its phase set, everything else (metadata.resourceVersion as precondition) kept. */
export function withPhase(job: KhJob, phase: JobPhase): KhJob {
  return { ...job, spec: { ...job.spec, phase } };
}
