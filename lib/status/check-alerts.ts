import { readNotifyState } from '../state/notify-state.ts';
import {
  availability,
  readUptime,
  UPTIME_WINDOWS,
  type UptimeWindow,
  windowCounts,
} from '../state/uptime.ts';

/**
 * What the status routes and tables show of a check's alerting: its availability from the uptime buckets,
 * and from the notify state its alert, the silence or window in force at its last decision, and the
 * failing parent that held its last failure back. Read from the khstate (a HealthCheck: its khstate view)
 * alone; `khrun status` and `describe` read a silence from the check object itself (the truth, at once).
 */
export interface CheckAlerts {
  /** OK results / all results in each window; null: none recorded in it. */
  availability: Record<UptimeWindow, number | null>;
  /** Results counted in each window. */
  runs: Record<UptimeWindow, number>;
  /** firing (an alert went out, or waits to), flapping, or absent (ok). */
  alert?: 'firing' | 'flapping';
  /** The silence or maintenance window in force (it ends by itself at `until`). */
  held?: { until: string; source: 'silence' | 'maintenance'; reason?: string; by?: string };
  /** The failing parent (and its own) that held the last failure back: it notified nobody. */
  blockedBy?: string[];
}

export function checkAlerts(
  obj: { metadata: { annotations?: Record<string, string> } } | null | undefined,
  nowMs: number,
): CheckAlerts {
  const uptime = readUptime(obj);
  const notify = readNotifyState(obj);
  const availabilities = {} as Record<UptimeWindow, number | null>;
  const runs = {} as Record<UptimeWindow, number>;
  for (const w of UPTIME_WINDOWS) {
    availabilities[w] = availability(uptime, w, nowMs);
    runs[w] = windowCounts(uptime, w, nowMs)[1];
  }
  const hold = notify?.hold && notify.hold.untilMs > nowMs ? notify.hold : undefined;
  return {
    availability: availabilities,
    runs,
    ...(notify?.flapping
      ? { alert: 'flapping' as const }
      : notify?.alert === 'firing'
        ? { alert: 'firing' as const }
        : {}),
    ...(hold
      ? {
          held: {
            until: new Date(hold.untilMs).toISOString(),
            source: hold.source,
            ...(hold.reason ? { reason: hold.reason } : {}),
            ...(hold.by ? { by: hold.by } : {}),
          },
        }
      : {}),
    ...(notify?.blocked && notify.alert === 'ok' ? { blockedBy: notify.blocked.by } : {}),
  };
}
