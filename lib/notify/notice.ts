import { createHash } from 'node:crypto';
import { shortId } from '../core/ids.ts';
import type { KindName } from '../core/run-target.ts';
import { truncateChars } from '../core/text.ts';
import type { AlertEvent, NotifyState, QueuedNotification } from '../state/notify-state.ts';
import type { OutcomeKind } from '../state/outcome-kind.ts';

/** What the transition is decided from: the outcome just recorded, as the same write records it. */
export interface OutcomeFacts {
  kind: KindName;
  outcome: OutcomeKind;
  ok: boolean;
  /** A skipped run records no result: nothing changes. */
  skipped: boolean;
  error?: string;
  /** The run whose outcome it is (a fresh id when it had none): the notification's idempotency key. */
  runUuid: string;
  atMs: number;
  /** The failure streak the write records (the khstate's consecutive failures, this outcome included). */
  consecutiveFailures: number;
  /** The check's run interval: a firing alert's endsAt at Alertmanager lies a few intervals ahead. */
  runIntervalMs: number;
}

/** What the write does about notifications. */
export type Transition = 'none' | 'fired' | 'reminded' | 'resolved' | 'flapping' | 'settled';

/** One step of the decision: the state it leads to and what it would send. */
export interface AlertStep {
  state: NotifyState;
  transition: Transition;
  notices: QueuedNotification[];
  suppressed?: 'blocked' | 'silenced' | 'flapping';
}

const MAX_ERROR_CHARS = 500;
/** endsAt at Alertmanager: four run intervals ahead (Prometheus renews by four evaluation intervals), at least 5 min. */
export const renewMsOf = (runIntervalMs: number) => Math.max(4 * runIntervalMs, 5 * 60_000);

/** A stable, non-reversible key from a run UUID: run UUIDs are report credentials, never sent outside. */
export const keyOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 20);

/** A notification of event about the alert in s (its incident, since, severity), decided by this outcome. */
export function notice(
  event: AlertEvent,
  s: Pick<NotifyState, 'incident' | 'severity' | 'sinceMs'>,
  facts: OutcomeFacts,
  channels: readonly string[],
  policy: { severity: string },
  extra: Partial<QueuedNotification> = {},
): QueuedNotification {
  return {
    id: `${keyOf(facts.runUuid)}-${event}`,
    incident: s.incident ?? keyOf(facts.runUuid),
    event,
    kind: facts.kind,
    outcome: facts.outcome,
    severity: s.severity ?? policy.severity,
    ...(facts.error && !facts.ok ? { error: truncateChars(facts.error, MAX_ERROR_CHARS) } : {}),
    run: shortId(facts.runUuid),
    failures: facts.consecutiveFailures,
    sinceMs: s.sinceMs ?? facts.atMs,
    atMs: facts.atMs,
    renewMs: renewMsOf(facts.runIntervalMs),
    channels: [...channels],
    attempts: 0,
    nextAtMs: facts.atMs,
    ...extra,
  };
}
