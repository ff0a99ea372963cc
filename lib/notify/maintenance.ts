import { type CronExpression, cronMatches, parseCron } from '../core/cron-expression.ts';
import { formatMsAsGoDuration, parseGoDuration } from '../core/duration.ts';
import { isTimeZone, zoneOffsetMs } from '../core/zoned-time.ts';
import { type Parsed, parsedBad, parsedOk } from './policy-value.ts';

/**
 * A recurring maintenance window: it opens whenever the cron expression fires in its time zone and stays
 * open for its duration. While one is open, a check's notifications are held as during a silence.
 * Written `CRON for DURATION [in ZONE]` (`0 2 * * SUN for 2h in Europe/Berlin`), several separated by `;`.
 */
export interface MaintenanceWindow {
  cron: CronExpression;
  durationMs: number;
  /** An IANA zone; UTC when the value names none. */
  timeZone: string;
}

const MINUTE = 60_000;
const MAX_WINDOWS = 4;
const MAX_DURATION_MS = 7 * 24 * 3600_000;
const WANT =
  'up to 4 windows separated by ";", each "CRON for DURATION [in ZONE]" with a five-field cron expression, a duration from 1m to 168h and an IANA time zone, e.g. "0 2 * * SUN for 2h in Europe/Berlin"';

export function parseMaintenance(value: string): Parsed<MaintenanceWindow[]> {
  const t = value.trim();
  if (t === '' || t === 'none') return parsedOk([]);
  const windows: MaintenanceWindow[] = [];
  const parts = t
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length > MAX_WINDOWS) return parsedBad(WANT);
  for (const part of parts) {
    const m = /^(.+?)\s+for\s+(\S+)(?:\s+in\s+(\S+))?$/.exec(part);
    if (!m) return parsedBad(WANT);
    const [, cronText = '', durationText = '', zone = 'UTC'] = m;
    const cron = parseCron(cronText);
    if (!cron.ok) return parsedBad(`${WANT} (${cron.error})`);
    const d = parseGoDuration(durationText);
    const durationMs = d.ok ? d.ns / 1e6 : Number.NaN;
    if (!(durationMs >= MINUTE && durationMs <= MAX_DURATION_MS))
      return parsedBad(`${WANT} ("${durationText}" is not a duration from 1m to 168h)`);
    if (!isTimeZone(zone)) return parsedBad(`${WANT} ("${zone}" is not a time zone this runtime knows)`);
    windows.push({ cron: cron.cron, durationMs, timeZone: zone });
  }
  return parsedOk(windows);
}

export const formatWindow = (w: MaintenanceWindow) =>
  `${w.cron.text} for ${formatMsAsGoDuration(w.durationMs)} in ${w.timeZone}`;

/**
 * When the window open at nowMs closes (the latest opening within its duration before nowMs, plus the
 * duration); undefined when none is open. Walks back minute by minute over at most the duration, the
 * zone's offset looked up once per half hour (offsets change on the hour or half hour).
 */
export function windowEndMs(w: MaintenanceWindow, nowMs: number): number | undefined {
  const offsets = new Map<number, number>();
  const offsetAt = (ms: number) => {
    const block = Math.floor(ms / (30 * MINUTE));
    let o = offsets.get(block);
    if (o === undefined) {
      o = zoneOffsetMs(w.timeZone, block * 30 * MINUTE);
      offsets.set(block, o);
    }
    return o;
  };
  const first = Math.floor(nowMs / MINUTE) * MINUTE;
  for (let start = first; start > nowMs - w.durationMs; start -= MINUTE) {
    const local = new Date(start + offsetAt(start));
    const fires = cronMatches(w.cron, {
      minute: local.getUTCMinutes(),
      hour: local.getUTCHours(),
      day: local.getUTCDate(),
      month: local.getUTCMonth() + 1,
      dayOfWeek: local.getUTCDay(),
    });
    if (fires) return start + w.durationMs;
  }
  return undefined;
}
