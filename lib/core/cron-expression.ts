/**
 * A five-field cron expression (minute hour day-of-month month day-of-week), as Kubernetes CronJobs and
 * crontab(5) read it: `*`, numbers, ranges `a-b`, steps `*\/n` and `a-b/n`, lists `a,b`, month and day
 * names (`JAN`, `MON`), 7 for Sunday. When both day fields are restricted, a day matches either (crontab's
 * rule). Pure: matching takes the calendar fields of a time, in whatever zone the caller chose.
 */
export interface CronExpression {
  text: string;
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  daysOfMonth: ReadonlySet<number>;
  months: ReadonlySet<number>;
  /** 0 (Sunday) to 6. */
  daysOfWeek: ReadonlySet<number>;
  /** Whether the day fields were `*` (crontab: then the other one alone decides). */
  anyDayOfMonth: boolean;
  anyDayOfWeek: boolean;
}

export type ParsedCron = { ok: true; cron: CronExpression } | { ok: false; error: string };

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** The first name's number (months: 1). */
  namesFrom?: number;
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  { name: 'day of week', min: 0, max: 7, names: DAYS, namesFrom: 0 },
];

function fieldValue(text: string, f: FieldSpec): number | undefined {
  const i = f.names?.indexOf(text.toUpperCase()) ?? -1;
  if (i >= 0) return i + (f.namesFrom ?? 0);
  if (!/^\d{1,2}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= f.min && n <= f.max ? n : undefined;
}

function parseField(text: string, f: FieldSpec): Set<number> | string {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^([^/]+)(?:\/(\d{1,2}))?$/.exec(part);
    if (!m) return `"${part}"`;
    const [, range = '', stepText] = m;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) return `"${part}" (a step of at least 1)`;
    let from: number | undefined;
    let to: number | undefined;
    if (range === '*') [from, to] = [f.min, f.max];
    else {
      const [a = '', b] = range.split('-');
      from = fieldValue(a, f);
      to = b === undefined ? (stepText === undefined ? from : f.max) : fieldValue(b, f);
    }
    if (from === undefined || to === undefined || from > to)
      return `"${part}" (${f.name}: ${f.min}-${f.max}${f.names ? ` or ${f.names[0]}-${f.names.at(-1)}` : ''})`;
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

/** Parses an expression; an error names the field and the value it could not read. */
export function parseCron(text: string): ParsedCron {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 5)
    return {
      ok: false,
      error: `"${text}" has ${parts.length} fields; a cron expression has 5 (minute hour day-of-month month day-of-week)`,
    };
  const sets: Set<number>[] = [];
  for (const [i, f] of FIELDS.entries()) {
    const set = parseField(parts[i] as string, f);
    if (typeof set === 'string')
      return { ok: false, error: `the ${f.name} field of "${text}" cannot be read: ${set}` };
    sets.push(set);
  }
  const [minutes, hours, daysOfMonth, months, dow] = sets as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  if (dow.has(7)) dow.add(0);
  dow.delete(7);
  return {
    ok: true,
    cron: {
      text: parts.join(' '),
      minutes,
      hours,
      daysOfMonth,
      months,
      daysOfWeek: dow,
      anyDayOfMonth: parts[2] === '*',
      anyDayOfWeek: parts[4] === '*',
    },
  };
}

/** Calendar fields of one minute: month 1-12, dayOfWeek 0 (Sunday)-6. */
export interface CalendarMinute {
  minute: number;
  hour: number;
  day: number;
  month: number;
  dayOfWeek: number;
}

/** Whether the expression fires at that minute. */
export function cronMatches(c: CronExpression, t: CalendarMinute): boolean {
  if (!c.minutes.has(t.minute) || !c.hours.has(t.hour) || !c.months.has(t.month)) return false;
  const dom = c.daysOfMonth.has(t.day);
  const dow = c.daysOfWeek.has(t.dayOfWeek);
  if (c.anyDayOfMonth || c.anyDayOfWeek) return dom && dow;
  return dom || dow;
}
