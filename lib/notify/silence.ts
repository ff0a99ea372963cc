import { truncateChars } from '../core/text.ts';
import { type Parsed, parsedBad, parsedOk } from './policy-value.ts';

/**
 * A silence: until when a check's notifications are held (or dropped: the policy's after-silence), why and
 * by whom. Written by a person (`khrun silence`) as the annotation notify.khrun.dev/silence on the check
 * object, where the admission policy keeps khrun's own identities from changing it (docs/alerts.md); it
 * ends by itself when its time passes, so an expired silence needs no writer.
 */
export interface Silence {
  untilMs: number;
  reason?: string;
  /** Who set it, as they were authenticated when they did. */
  by?: string;
  /** When it was set. */
  atMs?: number;
}

export const SILENCE_ANNOTATION = 'notify.khrun.dev/silence';
const MAX_REASON_CHARS = 200;
const MAX_BY_CHARS = 100;
/** Longer than this is not a silence but a policy: set notify.khrun.dev/channels=none instead. */
export const MAX_SILENCE_MS = 90 * 24 * 3600_000;

const WANT =
  'a time (RFC 3339, e.g. "2026-12-03T14:00:00Z") or {"until":"<time>","reason":"...","by":"..."}, as `khrun silence` writes it';

const time = (v: unknown) =>
  typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? Date.parse(v) : Number.NaN;
const text = (v: unknown, max: number) =>
  typeof v === 'string' && v.trim() ? truncateChars(v.trim(), max) : undefined;

/** The annotation's value: a bare RFC 3339 time, or the JSON `khrun silence` writes. */
export function parseSilence(value: string): Parsed<Silence> {
  const t = value.trim();
  if (!t.startsWith('{')) {
    const untilMs = time(t);
    return Number.isFinite(untilMs) ? parsedOk({ untilMs }) : parsedBad(WANT);
  }
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(t) as Record<string, unknown>;
  } catch {
    return parsedBad(WANT);
  }
  const untilMs = time(v?.until);
  if (!Number.isFinite(untilMs)) return parsedBad(WANT);
  const reason = text(v.reason, MAX_REASON_CHARS);
  const by = text(v.by, MAX_BY_CHARS);
  const atMs = time(v.at);
  return parsedOk({
    untilMs,
    ...(reason ? { reason } : {}),
    ...(by ? { by } : {}),
    ...(Number.isFinite(atMs) ? { atMs } : {}),
  });
}

/** The annotation's value for a silence (what `khrun silence` writes). */
export function formatSilence(s: Silence): string {
  return JSON.stringify({
    until: new Date(s.untilMs).toISOString(),
    ...(s.reason ? { reason: truncateChars(s.reason, MAX_REASON_CHARS) } : {}),
    ...(s.by ? { by: truncateChars(s.by, MAX_BY_CHARS) } : {}),
    ...(s.atMs !== undefined ? { at: new Date(s.atMs).toISOString() } : {}),
  });
}
