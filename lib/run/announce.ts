import type { AcquireDeps } from './acquire-deps.ts';
import type { RecordedOutcome } from './events.ts';

/**
 * Announces an outcome that is already recorded. The khstate is the truth and the Event only a view of
 * it, so a failure here is logged and swallowed: it must not turn a recorded run into a runner error.
 */
export async function announceOutcome(
  deps: Pick<AcquireDeps, 'events' | 'log'>,
  check: { namespace: string; name: string; uid?: string },
  recorded: Omit<RecordedOutcome, 'namespace' | 'name' | 'uid'>,
): Promise<void> {
  if (!deps.events) return;
  try {
    await deps.events.outcomeRecorded({
      namespace: check.namespace,
      name: check.name,
      uid: check.uid ?? '',
      ...recorded,
    });
  } catch (error) {
    deps.log.warn('could not emit the outcome event', {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
