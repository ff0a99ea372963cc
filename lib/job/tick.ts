import type { KhStateStore } from '../kube/cas.ts';
import type { DueTimings } from '../schedule/due.ts';
import { khStateClaims } from '../schedule/khstate-claims.ts';
import { scheduleOf } from '../schedule/schedule-of.ts';
import type { TickKind } from '../schedule/tick-kind.ts';
import type { KhState } from '../state/resources.ts';
import { decideJobDue } from './due.ts';
import { jobAsCheck, type KhJob } from './khjob.ts';

/**
 * khjobs in the tick: each new khjob (and each whose run a killed runner left) is its own runner
 * invocation, `khrun run --job`, after a dispatch claim on its khstate as a khcheck's. A khjob that ran
 * (or that something other than khrun runs) is not listed (decideJobDue). Whether the khjob then runs once
 * is the runner's to guarantee (lib/job).
 */
export function khjobTicks(p: {
  jobs: readonly KhJob[];
  store: KhStateStore;
  timings: DueTimings;
}): TickKind<KhJob, KhState> {
  return {
    kind: 'khjob',
    batches: false,
    objects: p.jobs,
    annotations: (job) => job.metadata.annotations,
    target: (job) => ({ kind: 'khjob', namespace: job.metadata.namespace, name: job.metadata.name }),
    listed: (job, states) => states.get(`${job.metadata.namespace}/${job.metadata.name}`) ?? null,
    decide: (job, state, nowMs) => decideJobDue(job, state, nowMs, p.timings),
    guardView: (listed) => listed,
    send: (job) => ({
      kind: 'khjob',
      namespace: job.metadata.namespace,
      name: job.metadata.name,
      timeoutMs: scheduleOf(jobAsCheck(job)).timeoutMs,
    }),
    claims: (target) => khStateClaims(p.store, target),
  };
}
