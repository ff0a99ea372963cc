/**
 * Times in an IANA time zone (`Europe/Berlin`), with the runtime's Intl data (Node and the Lambda runtime
 * carry full ICU): a zone's UTC offset at an instant, and whether a zone name is known.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether the runtime knows the zone (an IANA name such as `UTC`, `America/New_York`). */
export function isTimeZone(name: string): boolean {
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at that instant, in ms (Berlin in summer: +7,200,000). Throws for an unknown zone. */
export function zoneOffsetMs(timeZone: string, atMs: number): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(atMs)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return asUtc - Math.floor(atMs / 1000) * 1000;
}
