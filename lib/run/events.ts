import { randomBytes } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { formatMsAsGoDuration } from '../core/duration.ts';
import { truncateUtf8 } from '../core/text.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { OutcomeKind } from '../state/outcome-kind.ts';
import { KH_GROUP, KH_VERSION } from '../state/resources.ts';

/** An outcome that has just been recorded in the khstate, for the khcheck's Events. */
export interface RecordedOutcome {
  namespace: string;
  name: string;
  /** The khcheck's uid, so `kubectl describe khc` finds the Event; empty when unknown. */
  uid: string;
  /** Empty for an outcome recorded without a run (an invalid khcheck). */
  runUuid: string;
  outcome: RunOutcome;
  atMs: number;
  runner: string;
}

/** Where recorded outcomes are announced (Kubernetes Events). Best effort: the record is the truth. */
export interface EventSink {
  outcomeRecorded(recorded: RecordedOutcome): Promise<void>;
}

/** Event reasons on the khcheck, one per recorded outcome; `kubectl describe khc` lists them. */
export const EventReason = {
  CheckSucceeded: 'CheckSucceeded',
  CheckFailed: 'CheckFailed',
  CheckTimedOut: 'CheckTimedOut',
  CheckSkipped: 'CheckSkipped',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

export const EVENT_COMPONENT = 'khrun';

/** events.k8s.io caps a note at 1 kB; core/v1 messages are kept to the same so both views agree. */
export const MAX_EVENT_MESSAGE_BYTES = 1024;

export interface OutcomeEventText {
  type: 'Normal' | 'Warning';
  reason: EventReason;
  message: string;
}

/**
 * What the Event says about an outcome. An execution error (invalid khcheck, pod that could not start) is
 * a failure of the check as far as its owner is concerned, so it is CheckFailed with the v2 error text.
 */
export function outcomeEventText(outcome: RunOutcome, runUuid: string): OutcomeEventText {
  const run = runUuid ? `run ${runUuid.slice(0, 8)} ` : '';
  const took = formatMsAsGoDuration(outcome.durationMs);
  const on = outcome.node ? ` on node ${outcome.node}` : '';
  const errors = outcome.errors.filter((e) => e.trim() !== '').join('; ');
  let text: OutcomeEventText;
  switch (outcome.kind) {
    case OutcomeKind.Succeeded:
      text = {
        type: 'Normal',
        reason: EventReason.CheckSucceeded,
        message: `${run}succeeded in ${took}${on}`,
      };
      break;
    case OutcomeKind.Skipped:
      text = {
        type: 'Normal',
        reason: EventReason.CheckSkipped,
        message: `${run}skipped, the previous result stands${outcome.note ? `: ${outcome.note}` : ''}`,
      };
      break;
    case OutcomeKind.TimedOut:
      text = {
        type: 'Warning',
        reason: EventReason.CheckTimedOut,
        message: `${run}timed out after ${took}${on}: ${errors}`,
      };
      break;
    default:
      text = {
        type: 'Warning',
        reason: EventReason.CheckFailed,
        message: `${run}failed after ${took}${on}: ${errors || 'no error given'}`,
      };
  }
  return { ...text, message: truncateUtf8(text.message, MAX_EVENT_MESSAGE_BYTES) };
}

/** The core/v1 Event for a recorded outcome, on the khcheck, from component khrun. */
export function outcomeEvent(recorded: RecordedOutcome): CoreV1Event {
  const text = outcomeEventText(recorded.outcome, recorded.runUuid);
  const at = new Date(recorded.atMs);
  // kubectl's naming: the object's name and a unique suffix (the name is capped at 253 characters).
  const suffix = `${recorded.atMs.toString(16)}${randomBytes(3).toString('hex')}`;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: `${recorded.name.slice(0, 253 - suffix.length - 1)}.${suffix}`,
      namespace: recorded.namespace,
    },
    involvedObject: {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: 'KuberhealthyCheck',
      name: recorded.name,
      namespace: recorded.namespace,
      ...(recorded.uid ? { uid: recorded.uid } : {}),
    },
    type: text.type,
    reason: text.reason,
    message: text.message,
    source: { component: EVENT_COMPONENT, host: recorded.runner },
    reportingComponent: EVENT_COMPONENT,
    reportingInstance: recorded.runner.slice(0, 128),
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
  };
}

/** An EventSink writing core/v1 Events (needs `create` on `events` in the check's namespace). */
export function kubeEventSink(client: KubeClient): EventSink {
  const core = client.core;
  return {
    async outcomeRecorded(recorded) {
      await core.createNamespacedEvent({ namespace: recorded.namespace, body: outcomeEvent(recorded) });
    },
  };
}
