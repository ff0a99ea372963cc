import { parseGoDuration } from '../core/duration.ts';
import { type Parsed, parsedBad, parsedOk } from './policy-value.ts';

/**
 * Flapping (notify.khrun.dev/flapping: "6 in 1h"): that many transitions (fired, resolved) within the
 * window become one "flapping" notice instead of one each; the check has settled once a whole window
 * passes without a transition, and a "settled" notice says how it ended.
 */
export interface FlapPolicy {
  transitions: number;
  windowMs: number;
}

export const MAX_FLAP_TRANSITIONS = 20;
const WANT = `"K in DURATION" with K from 2 to ${MAX_FLAP_TRANSITIONS} and a duration from 1m to 24h, e.g. "6 in 1h", or "off"`;

export function parseFlapping(value: string): Parsed<FlapPolicy | null> {
  const t = value.trim();
  if (t === 'off' || t === '0') return parsedOk(null);
  const m = /^(\d{1,2})\s+in\s+(\S+)$/.exec(t);
  if (!m) return parsedBad(WANT);
  const transitions = Number(m[1]);
  const d = parseGoDuration(m[2] ?? '');
  const windowMs = d.ok ? d.ns / 1e6 : Number.NaN;
  if (
    transitions < 2 ||
    transitions > MAX_FLAP_TRANSITIONS ||
    !(windowMs >= 60_000 && windowMs <= 24 * 3600_000)
  )
    return parsedBad(WANT);
  return parsedOk({ transitions, windowMs });
}

/** The transition times kept: those within the window before atMs, with atMs, at most the policy's count. */
export function flipsWithin(flips: readonly number[] | undefined, atMs: number, p: FlapPolicy): number[] {
  return [...(flips ?? []).filter((t) => t > atMs - p.windowMs), atMs].slice(-p.transitions);
}
