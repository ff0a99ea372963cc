import { formatWindow, type MaintenanceWindow, windowEndMs } from './maintenance.ts';
import type { Silence } from './silence.ts';

/** Why and until when a check's notifications are held now: a silence, or an open maintenance window. */
export interface Hold {
  untilMs: number;
  source: 'silence' | 'maintenance';
  reason?: string;
  by?: string;
}

/** What a hold is decided from: the policy's silence and windows. */
export interface HoldSettings {
  silence: Silence | null;
  maintenance: readonly MaintenanceWindow[];
}

const MAX_CHAIN = 8;

/**
 * The hold in force at nowMs, pure: an unexpired silence or an open window. Its end is where nothing holds
 * any more: a window that opens (or a silence that lasts) at the end of another extends it, a few links at
 * most. Undefined: notifications go out as usual.
 */
export function holdAt(s: HoldSettings, nowMs: number): Hold | undefined {
  let hold: Hold | undefined;
  let at = nowMs;
  for (let i = 0; i < MAX_CHAIN; i++) {
    const found = openAt(s, at);
    if (!found || (hold && found.untilMs <= hold.untilMs)) break;
    hold = hold ? { ...hold, untilMs: found.untilMs } : found;
    at = found.untilMs;
  }
  return hold;
}

function openAt(s: HoldSettings, atMs: number): Hold | undefined {
  let best: Hold | undefined;
  if (s.silence && s.silence.untilMs > atMs)
    best = {
      untilMs: s.silence.untilMs,
      source: 'silence',
      ...(s.silence.reason ? { reason: s.silence.reason } : {}),
      ...(s.silence.by ? { by: s.silence.by } : {}),
    };
  for (const w of s.maintenance) {
    const end = windowEndMs(w, atMs);
    if (end !== undefined && (!best || end > best.untilMs))
      best = { untilMs: end, source: 'maintenance', reason: `maintenance window ${formatWindow(w)}` };
  }
  return best;
}
