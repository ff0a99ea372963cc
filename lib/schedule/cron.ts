import { formatMsAsGoDuration } from '../core/duration.ts';

/** A cron schedule for a runInterval, and whether it fires at exactly that interval. */
export interface CronChoice {
  schedule: string;
  exact: boolean;
  /** The interval the schedule actually has. */
  intervalMs: number;
  /** Set when the schedule is not exact: what was asked, what was chosen, why. */
  note?: string;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Intervals a five-field cron expression repeats exactly: divisors of an hour, of a day, a day, a week. */
const EXACT_MINUTES = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30];
const EXACT_HOURS = [1, 2, 3, 4, 6, 8, 12];

function expression(intervalMs: number, seed: number): string {
  const byte = (i: number) => (seed >>> (8 * i)) & 0xff;
  const minute = byte(0) % 60;
  if (intervalMs < HOUR) {
    const n = intervalMs / MINUTE;
    if (n === 1) return '* * * * *';
    const offset = byte(0) % n;
    return `${offset === 0 ? '*' : `${offset}-59`}/${n} * * * *`;
  }
  if (intervalMs < DAY) {
    const h = intervalMs / HOUR;
    if (h === 1) return `${minute} * * * *`;
    const offset = byte(1) % h;
    return `${minute} ${offset === 0 ? '*' : `${offset}-23`}/${h} * * *`;
  }
  const hour = byte(2) % 24;
  if (intervalMs === DAY) return `${minute} ${hour} * * *`;
  return `${minute} ${hour} * * ${byte(3) % 7}`;
}

/**
 * The cron schedule for a runInterval. Intervals that divide an hour or a day, a day and a week are exact;
 * any other interval gets the longest exact one not longer than it (so the check runs at least as often as
 * asked), and below a minute, every minute (cron's finest). The minute and hour offsets come from `seed`
 * (stable per check), so checks with the same interval do not all start in the same second.
 */
export function cronForInterval(runIntervalMs: number, seed: number): CronChoice {
  const candidates = [
    ...EXACT_MINUTES.map((m) => m * MINUTE),
    ...EXACT_HOURS.map((h) => h * HOUR),
    DAY,
    7 * DAY,
  ];
  const exact = candidates.includes(runIntervalMs);
  const chosen = exact ? runIntervalMs : (candidates.filter((c) => c <= runIntervalMs).pop() ?? MINUTE);
  const schedule = expression(chosen, seed >>> 0);
  if (exact) return { schedule, exact, intervalMs: chosen };
  const asked = formatMsAsGoDuration(runIntervalMs);
  const got = formatMsAsGoDuration(chosen);
  const why =
    runIntervalMs < MINUTE
      ? 'cron fires at most once a minute'
      : `the longest interval cron repeats exactly that is not longer than ${asked}`;
  return {
    schedule,
    exact,
    intervalMs: chosen,
    note: `runInterval ${asked} has no exact cron form; scheduled every ${got} ("${schedule}"): ${why}`,
  };
}
