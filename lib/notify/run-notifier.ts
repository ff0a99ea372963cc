import type { KindName } from '../core/run-target.ts';
import { type KhStateStore, updateKhStateWithRetry } from '../kube/cas.ts';
import { readKhState } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
import type { Notifier, RecordedFacts } from './notifier.ts';
import type { OutboxStore } from './store.ts';

/** What the engine knows when it records an outcome. */
export interface RecordedOutcome {
  /** The check object as the run read it (its annotations carry the policy). */
  check: Pick<KhCheck, 'metadata'>;
  runIntervalMs: number;
  outcome: Pick<RunOutcome, 'kind' | 'ok' | 'errors'>;
  runUuid: string;
  atMs: number;
  /** Who delivers what the write queues (the run's holder); absent: left to the tick or the next run. */
  holder?: string;
}

/**
 * The engine's port to notifications (AcquireDeps.notify), for one kind of object over its khstate store:
 * the engine calls decide inside each outcome write, afterWrite once it landed.
 */
export interface RunNotifier {
  /** The khstate (recordOutcome's result) with the transition this outcome decides. Never throws. */
  decide(recorded: KhState, o: RecordedOutcome): Promise<KhState>;
  /** Whether the written khstate holds notifications for o.holder to deliver now. */
  pending(written: KhState, o: RecordedOutcome): boolean;
  /** Delivers them (and marks them done), renews a firing alert; never throws. */
  afterWrite(written: KhState, o: RecordedOutcome): Promise<void>;
}

export function runNotifier(notifier: Notifier, kind: KindName, kube: KhStateStore): RunNotifier {
  const facts = (state: KhState, o: RecordedOutcome): RecordedFacts => ({
    subject: {
      kind,
      namespace: o.check.metadata.namespace,
      name: o.check.metadata.name,
      annotations: o.check.metadata.annotations,
    },
    outcome: o.outcome,
    runUuid: o.runUuid,
    atMs: o.atMs,
    consecutiveFailures: readKhState(state).consecutiveFailures ?? 0,
    runIntervalMs: o.runIntervalMs,
    ...(o.holder ? { holder: o.holder } : {}),
  });
  const storeOf = (state: KhState): OutboxStore<KhState> => ({
    update: (loop) => updateKhStateWithRetry(kube, state.metadata, loop),
  });
  return {
    decide: (recorded, o) => notifier.decide(recorded, facts(recorded, o)),
    pending: (written, o) => (o.holder ? notifier.pending(written, o.holder) : false),
    afterWrite: (written, o) => notifier.afterWrite(storeOf(written), written, facts(written, o)),
  };
}
