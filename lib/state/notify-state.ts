import type { KindName } from '../core/run-target.ts';
import type { OutcomeKind } from './outcome-kind.ts';

/**
 * A check's alert and its notification outbox, kept in the khstate (a HealthCheck: on the HealthCheck)
 * beside the outcome: the transition and the notification it queues are written by the outcome's own
 * compare-and-swap write (lib/notify decides), and a delivery is marked done by another, so however many
 * runners, ticks and retries there are, each transition is decided once and delivered until done.
 */
export const NOTIFY_ANNOTATION = 'khrun.dev/notify';

/**
 * What a notification announces: the alert fired, is still firing (a reminder), or resolved; or the check
 * started flapping (its transitions are held back until it settles) or settled.
 */
export type AlertEvent = 'firing' | 'reminder' | 'resolved' | 'flapping' | 'settled';

/** Who may deliver a queued notification, until when: the invocation whose write queued or claimed it. */
export interface DeliveryLease {
  holder: string;
  untilMs: number;
}

/**
 * One queued notification: everything its text needs, fixed when it was decided (the tick delivers it
 * from the khstate alone), and which channels it still has to reach.
 */
export interface QueuedNotification {
  /** The idempotency key: derived from the deciding run's UUID and the event, unique per notification. */
  id: string;
  /** The incident it belongs to (derived from the run that fired it): its firing, reminders and resolution share it. */
  incident: string;
  event: AlertEvent;
  kind: KindName;
  /** The deciding outcome. */
  outcome: OutcomeKind;
  /** The policy's severity (PagerDuty's, the `severity` label at Alertmanager). */
  severity: string;
  /** Its first error, bounded; absent for a success. */
  error?: string;
  /** The deciding run's UUID prefix (core/ids.ts shortId), as logs show it. */
  run: string;
  /** Consecutive failures when it was decided. */
  failures: number;
  /** When the incident's failures began (epoch ms). */
  sinceMs: number;
  /** When it was decided (epoch ms). */
  atMs: number;
  /** How long a firing alert stays firing at Alertmanager unless renewed (its endsAt). */
  renewMs: number;
  /** Channels not delivered yet, by name (the configuration defines them). */
  channels: string[];
  /** Failed delivery passes so far. */
  attempts: number;
  /** Not to be tried before (epoch ms): the backoff after a failed pass. */
  nextAtMs: number;
  lease?: DeliveryLease;
  /** Why the last pass failed, bounded. */
  lastError?: string;
  /** Held by a silence or maintenance window until nextAtMs (re-checked before it goes out). */
  held?: true;
  /** flapping: the transitions counted within windowMs. */
  flaps?: number;
  windowMs?: number;
  /** settled: the alert's state when the check settled. */
  alert?: 'ok' | 'firing';
}

/** Who knew what when a check started flapping: its incident as the receivers last heard of it. */
export interface FlappingState {
  /** The flapping notice's incident (its id at Alertmanager and PagerDuty). */
  incident: string;
  sinceMs: number;
  /** The last transition while flapping: it settles windowMs after it. */
  lastMs: number;
  windowMs: number;
  channels: string[];
  severity: string;
  /** The incident the receivers knew as firing when it started (absent: they knew it ok). */
  announced?: { incident: string; channels: string[]; severity: string };
}

/** The silence or maintenance window in force at the last decision, for the status page and JSON. */
export interface HoldRecord {
  untilMs: number;
  source: 'silence' | 'maintenance';
  reason?: string;
  by?: string;
}

export interface NotifyState {
  alert: 'ok' | 'firing';
  /** The firing incident (absent while ok). */
  incident?: string;
  /** The channels its firing went to: its reminders and resolution go there too (absent while ok). */
  channels?: string[];
  /** The severity it fired with: its reminders and resolution carry the same (Alertmanager's labels must match). */
  severity?: string;
  /** When the current run of failures began (epoch ms); absent after a success while ok. */
  sinceMs?: number;
  /** Consecutive successes while firing. */
  successes: number;
  /** When the last firing or reminder was queued (epoch ms): the next reminder counts from it. */
  lastSentMs?: number;
  outbox: QueuedNotification[];
  /** Notifications dropped by the outbox's bounds (too many pending, or undeliverable for too long). */
  dropped?: number;
  /** The last delivery a receiver refused for good (a 4xx), for `describe` and logs. */
  rejected?: { id: string; channel: string; status: number; atMs: number };
  /** What was wrong with the policy at the last decision (an annotation's value...), bounded. */
  problems?: string[];
  /** The firing incident was not announced (it fired during a silence with after-silence: drop): none of it is. */
  quiet?: true;
  /** The last failing outcome found these parents failing (direct parent first, root last): it notified nobody. */
  blocked?: { by: string[]; atMs: number };
  /** When the last transitions happened (fired, resolved), newest last, bounded: what flapping is counted from. */
  flips?: number[];
  flapping?: FlappingState;
  /** The silence or window in force at the last decision (the check object's annotation is the truth). */
  hold?: HoldRecord;
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const EVENTS: readonly string[] = ['firing', 'reminder', 'resolved', 'flapping', 'settled'];
const strs = (v: unknown): v is string[] => Array.isArray(v) && v.every(isStr);

function isQueued(v: unknown): v is QueuedNotification {
  if (!isObj(v)) return false;
  const lease = v.lease;
  return (
    isStr(v.id) &&
    isStr(v.incident) &&
    EVENTS.includes(v.event as string) &&
    isStr(v.kind) &&
    isStr(v.outcome) &&
    isStr(v.severity) &&
    (v.error === undefined || isStr(v.error)) &&
    isStr(v.run) &&
    isNum(v.failures) &&
    isNum(v.sinceMs) &&
    isNum(v.atMs) &&
    isNum(v.renewMs) &&
    Array.isArray(v.channels) &&
    v.channels.every(isStr) &&
    isNum(v.attempts) &&
    isNum(v.nextAtMs) &&
    (lease === undefined || (isObj(lease) && isStr(lease.holder) && isNum(lease.untilMs))) &&
    (v.lastError === undefined || isStr(v.lastError)) &&
    (v.held === undefined || v.held === true) &&
    (v.flaps === undefined || isNum(v.flaps)) &&
    (v.windowMs === undefined || isNum(v.windowMs)) &&
    (v.alert === undefined || v.alert === 'ok' || v.alert === 'firing')
  );
}

function parseFlapping(v: unknown): FlappingState | undefined {
  if (!isObj(v)) return undefined;
  if (!isStr(v.incident) || !isNum(v.sinceMs) || !isNum(v.lastMs) || !isNum(v.windowMs)) return undefined;
  if (!strs(v.channels) || !isStr(v.severity)) return undefined;
  const a = v.announced;
  const announced =
    isObj(a) && isStr(a.incident) && strs(a.channels) && isStr(a.severity)
      ? { incident: a.incident, channels: a.channels, severity: a.severity }
      : undefined;
  return {
    incident: v.incident,
    sinceMs: v.sinceMs,
    lastMs: v.lastMs,
    windowMs: v.windowMs,
    channels: v.channels,
    severity: v.severity,
    ...(announced ? { announced } : {}),
  };
}

function parseHold(v: unknown): HoldRecord | undefined {
  if (!isObj(v) || !isNum(v.untilMs) || (v.source !== 'silence' && v.source !== 'maintenance'))
    return undefined;
  return {
    untilMs: v.untilMs,
    source: v.source,
    ...(isStr(v.reason) ? { reason: v.reason } : {}),
    ...(isStr(v.by) ? { by: v.by } : {}),
  };
}

/**
 * Parses the annotation. A damaged one reads as absent (an alert that is ok, nothing queued) rather than
 * trusted; damaged entries of the outbox are dropped, the rest kept.
 */
export function parseNotifyState(text: string | undefined): NotifyState | undefined {
  if (!text) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObj(v) || (v.alert !== 'ok' && v.alert !== 'firing')) return undefined;
  const state: NotifyState = {
    alert: v.alert,
    successes: isNum(v.successes) ? v.successes : 0,
    outbox: Array.isArray(v.outbox) ? v.outbox.filter(isQueued) : [],
  };
  if (isStr(v.incident)) state.incident = v.incident;
  if (Array.isArray(v.channels) && v.channels.every(isStr)) state.channels = v.channels;
  if (isStr(v.severity)) state.severity = v.severity;
  if (isNum(v.sinceMs)) state.sinceMs = v.sinceMs;
  if (isNum(v.lastSentMs)) state.lastSentMs = v.lastSentMs;
  if (isNum(v.dropped) && v.dropped > 0) state.dropped = v.dropped;
  const r = v.rejected;
  if (isObj(r) && isStr(r.id) && isStr(r.channel) && isNum(r.status) && isNum(r.atMs))
    state.rejected = { id: r.id, channel: r.channel, status: r.status, atMs: r.atMs };
  if (Array.isArray(v.problems) && v.problems.every(isStr) && v.problems.length) state.problems = v.problems;
  if (v.quiet === true) state.quiet = true;
  const b = v.blocked;
  if (isObj(b) && strs(b.by) && b.by.length && isNum(b.atMs)) state.blocked = { by: b.by, atMs: b.atMs };
  if (Array.isArray(v.flips) && v.flips.every(isNum) && v.flips.length) state.flips = v.flips;
  const flapping = parseFlapping(v.flapping);
  if (flapping) state.flapping = flapping;
  const hold = parseHold(v.hold);
  if (hold) state.hold = hold;
  return state;
}

/** The annotation text; the fields in a fixed order, so an unchanged state writes the same text. */
export function formatNotifyState(state: NotifyState): string {
  return JSON.stringify({
    alert: state.alert,
    ...(state.incident !== undefined ? { incident: state.incident } : {}),
    ...(state.channels !== undefined ? { channels: state.channels } : {}),
    ...(state.severity !== undefined ? { severity: state.severity } : {}),
    ...(state.sinceMs !== undefined ? { sinceMs: state.sinceMs } : {}),
    successes: state.successes,
    ...(state.lastSentMs !== undefined ? { lastSentMs: state.lastSentMs } : {}),
    outbox: state.outbox,
    ...(state.dropped ? { dropped: state.dropped } : {}),
    ...(state.rejected ? { rejected: state.rejected } : {}),
    ...(state.problems?.length ? { problems: state.problems } : {}),
    ...(state.quiet ? { quiet: true } : {}),
    ...(state.blocked ? { blocked: state.blocked } : {}),
    ...(state.flips?.length ? { flips: state.flips } : {}),
    ...(state.flapping ? { flapping: state.flapping } : {}),
    ...(state.hold ? { hold: state.hold } : {}),
  });
}

/** The notify state of any object that keeps it in its annotations (a khstate, a HealthCheck). */
export function readNotifyState(
  obj: { metadata: { annotations?: Record<string, string> } } | null | undefined,
) {
  return parseNotifyState(obj?.metadata.annotations?.[NOTIFY_ANNOTATION]);
}

/** obj with its notify state replaced (removed when undefined), everything else kept. Pure. */
export function withNotifyState<T extends { metadata: { annotations?: Record<string, string> } }>(
  obj: T,
  state: NotifyState | undefined,
): T {
  const annotations = { ...(obj.metadata.annotations ?? {}) };
  if (state) annotations[NOTIFY_ANNOTATION] = formatNotifyState(state);
  else delete annotations[NOTIFY_ANNOTATION];
  return { ...obj, metadata: { ...obj.metadata, annotations } };
}
