import { parseGoDuration } from '../core/duration.ts';

/** Seconds in a Go duration string; v2 emits 0 for an empty or unparsable RunDuration. */
export function runDurationSeconds(text: string): number {
  const parsed = parseGoDuration(text || '0s');
  return parsed.ok ? parsed.ns / 1e9 : 0;
}
