import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { jobAsCheck, type KhJob } from '../job/khjob.ts';
import type { KhState } from '../state/resources.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import { claimAndDispatch } from './dispatch-one.ts';
import type { Dispatcher } from './dispatcher.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings } from './due.ts';
import { decideJobDue } from './due-jobs.ts';
import { scheduleOf } from './schedule-of.ts';
import type { TickEntry } from './tick-entry.ts';
import type { TickKube } from './tick-port.ts';

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/**
 * The tick's part for khjobs: each new khjob (and each whose run a killed runner left) is dispatched as its
 * own runner invocation, `khrun run --job`, after the same dispatch claim as a khcheck's (on its khstate), so
 * of two ticks at once only one sends it. Whether the khjob then runs once is the runner's to guarantee
 * (lib/job). Entries are listed under `khjob/namespace/name`; khjobs that already ran are not listed.
 */
export async function dispatchDueJobs(
  deps: { kube: TickKube; dispatcher: Dispatcher; clock: Clock; log: Log },
  c: {
    jobs: readonly KhJob[];
    states: ReadonlyMap<string, KhState>;
    identity: string;
    timings?: DueTimings;
    maxAttempts: number;
    /** Dispatch khjobs a Kuberhealthy runs too (KHRUN_TAKE_OVER); else skipped as 'refused', as checks are. */
    takeOver?: boolean;
  },
): Promise<TickEntry[]> {
  const timings = c.timings ?? DEFAULT_DUE_TIMINGS;
  const entries: TickEntry[] = [];
  const sorted = [...c.jobs].sort((a, b) =>
    keyOf(a.metadata.namespace, a.metadata.name).localeCompare(keyOf(b.metadata.namespace, b.metadata.name)),
  );
  for (const job of sorted) {
    const { namespace, name } = job.metadata;
    const key = keyOf(namespace, name);
    const label = `khjob/${key}`;
    const decide = (state: KhState | null) => decideJobDue(job, state, deps.clock.nowMs(), timings);
    const listed = c.states.get(key) ?? null;
    const first = decide(listed);
    if (!first) continue;
    if (!first.due) {
      entries.push({ check: label, decision: first, result: 'not-due' });
      continue;
    }
    const refusal = kuberhealthyGuard({ namespace, name }, { takeOver: c.takeOver ?? false })?.(listed);
    if (refusal) {
      deps.log.warn('refused: a Kuberhealthy runs it', { check: label });
      entries.push({ check: label, decision: first, result: 'refused', error: refusal });
      continue;
    }
    const target = {
      namespace,
      name,
      timeoutMs: scheduleOf(jobAsCheck(job)).timeoutMs,
      kind: 'khjob' as const,
    };
    entries.push(
      await claimAndDispatch(
        { store: deps.kube, dispatcher: deps.dispatcher, clock: deps.clock, log: deps.log },
        { target, label, first, listed, decide, identity: c.identity, maxAttempts: c.maxAttempts },
      ),
    );
  }
  return entries;
}
