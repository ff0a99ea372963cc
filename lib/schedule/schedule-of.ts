import { DEFAULT_RUN_INTERVAL, DEFAULT_TIMEOUT, validateCheck } from '../check/validate-check.ts';
import { parseGoDuration } from '../core/duration.ts';
import type { KhCheck } from '../state/resources.ts';

export interface CheckSchedule {
  runIntervalMs: number;
  timeoutMs: number;
  /** Why the khcheck is invalid, when it is: it is still scheduled (at v2's defaults for what cannot be
   * read) so that its runner records the reason in the khstate, where people look. */
  problem?: string;
}

function durationMs(raw: unknown, fallback: string): number {
  const parsed = parseGoDuration(typeof raw === 'string' && raw ? raw : fallback);
  if (parsed.ok && parsed.ns > 0) return parsed.ns / 1e6;
  const def = parseGoDuration(fallback);
  return def.ok ? def.ns / 1e6 : 600_000;
}

/** The interval and timeout a khcheck is scheduled with. */
export function scheduleOf(check: KhCheck): CheckSchedule {
  const valid = validateCheck(check);
  if (valid.ok) return { runIntervalMs: valid.check.runIntervalMs, timeoutMs: valid.check.timeoutMs };
  return {
    runIntervalMs: durationMs(check.spec?.runInterval, DEFAULT_RUN_INTERVAL),
    timeoutMs: durationMs(check.spec?.timeout, DEFAULT_TIMEOUT),
    problem: valid.reason,
  };
}
