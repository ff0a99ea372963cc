/**
 * Counted availability: how many recorded results were OK, per hour for the last 24 hours and per UTC day
 * for the last 30 days, kept in the khstate (a HealthCheck: on it) and updated by the outcome's own write,
 * so it costs no request and reads the same from every front end. Bounded: 24 + 30 pairs of counts.
 * Skipped runs measured nothing and are not counted.
 */
export const UPTIME_ANNOTATION = 'khrun.dev/uptime';

export const HOUR_MS = 3600_000;
export const DAY_MS = 24 * HOUR_MS;
const HOURS = 24;
const DAYS = 30;

/** [OK results, all results] of one bucket. */
export type Counts = [number, number];

export interface Uptime {
  /** The newest hourly bucket's hour (epoch ms / HOUR_MS); hours[i] is the bucket of hour - (length - 1 - i). */
  hour: number;
  hours: Counts[];
  /** The newest daily bucket's UTC day (epoch ms / DAY_MS); days as hours. */
  day: number;
  days: Counts[];
}

export const UPTIME_WINDOWS = ['24h', '7d', '30d'] as const;
export type UptimeWindow = (typeof UPTIME_WINDOWS)[number];

const isCount = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isCounts = (v: unknown): v is Counts =>
  Array.isArray(v) && v.length === 2 && isCount(v[0]) && isCount(v[1]) && v[0] <= v[1];

/** Parses the annotation; a damaged one reads as absent (counting starts over), never as trusted counts. */
export function parseUptime(text: string | undefined): Uptime | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (!v || !isCount(v.hour) || !isCount(v.day)) return undefined;
    if (!Array.isArray(v.hours) || !v.hours.every(isCounts) || v.hours.length > HOURS) return undefined;
    if (!Array.isArray(v.days) || !v.days.every(isCounts) || v.days.length > DAYS) return undefined;
    return { hour: v.hour as number, hours: v.hours, day: v.day as number, days: v.days };
  } catch {
    return undefined;
  }
}

export function readUptime(
  state: { metadata: { annotations?: Record<string, string> } } | null | undefined,
): Uptime | undefined {
  return parseUptime(state?.metadata.annotations?.[UPTIME_ANNOTATION]);
}

/** buckets (the newest at index `newest`) moved on to `at` and counted into: at most `keep` buckets. */
function count(buckets: readonly Counts[], newest: number, at: number, ok: boolean, keep: number) {
  let list = buckets.map((c) => [...c] as Counts);
  let head = newest;
  if (list.length === 0) {
    list = [[0, 0]];
    head = at;
  }
  if (at > head) {
    const gap = Math.min(at - head, keep);
    for (let i = 0; i < gap; i++) list.push([0, 0]);
    head = at;
  }
  const i = list.length - 1 - (head - at);
  if (i >= 0) {
    const c = list[i] as Counts;
    list[i] = [c[0] + (ok ? 1 : 0), c[1] + 1];
  }
  list = list.slice(-keep);
  return { head, list };
}

/** The uptime with one more result at atMs (a result older than the buckets kept is not counted). */
export function addResult(u: Uptime | undefined, ok: boolean, atMs: number): Uptime {
  const hourAt = Math.floor(atMs / HOUR_MS);
  const dayAt = Math.floor(atMs / DAY_MS);
  const hours = count(u?.hours ?? [], u?.hour ?? hourAt, hourAt, ok, HOURS);
  const days = count(u?.days ?? [], u?.day ?? dayAt, dayAt, ok, DAYS);
  return { hour: hours.head, hours: hours.list, day: days.head, days: days.list };
}

/** The counts of a window at nowMs: 24h from the hourly buckets, 7d and 30d from the daily (UTC days, today's so far). */
export function windowCounts(u: Uptime | undefined, window: UptimeWindow, nowMs: number): Counts {
  if (!u) return [0, 0];
  const [buckets, newest, now, span] =
    window === '24h'
      ? [u.hours, u.hour, Math.floor(nowMs / HOUR_MS), HOURS]
      : [u.days, u.day, Math.floor(nowMs / DAY_MS), window === '7d' ? 7 : DAYS];
  let ok = 0;
  let all = 0;
  buckets.forEach((c, i) => {
    const index = newest - (buckets.length - 1 - i);
    if (index > now - span && index <= now) {
      ok += c[0];
      all += c[1];
    }
  });
  return [ok, all];
}

/** The share of OK results in the window (0 to 1), or null when none was recorded in it. */
export function availability(u: Uptime | undefined, window: UptimeWindow, nowMs: number): number | null {
  const [ok, all] = windowCounts(u, window, nowMs);
  return all === 0 ? null : ok / all;
}

/** `99.93%` (two decimals, floored so 99.999% never shows as 100%), or `-` with no results. */
export function formatAvailability(ratio: number | null): string {
  if (ratio === null) return '-';
  return `${(Math.floor(ratio * 10_000) / 100).toFixed(2)}%`;
}
