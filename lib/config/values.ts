import { parseGoDuration } from '../core/duration.ts';
import { ConfigError } from './config-error.ts';
import type { Setting } from './setting.ts';

// Typed getters: one setting's text to a value, its default when unset, or a ConfigError that names the
// setting, says what was wrong and what to do. Numbers are never NaN, ports never out of range.

function invalid(s: Setting, problem: string, remedy: string): ConfigError {
  return new ConfigError({ setting: s.source, value: s.text, problem, remedy });
}

/** A number of seconds, in ms: positive, or zero too with allowZero. */
export function secondsMs(s: Setting, opts: { defaultSeconds: number; allowZero?: boolean }): number {
  if (s.text === undefined) return opts.defaultSeconds * 1000;
  const n = Number(s.text.trim());
  const ok = s.text.trim() !== '' && Number.isFinite(n) && (opts.allowZero ? n >= 0 : n > 0);
  if (!ok) {
    throw invalid(
      s,
      `must be a ${opts.allowZero ? 'non-negative' : 'positive'} number of seconds`,
      `give a number such as ${opts.defaultSeconds || 10}, or leave it unset for the default (${opts.defaultSeconds})`,
    );
  }
  return n * 1000;
}

/** A Go duration (`90s`, `5m`, `1h30m`), in ms: positive, or zero too (`0s`, `0`) with allowZero. */
export function goDurationMs(s: Setting, opts: { defaultMs: number; allowZero?: boolean }): number {
  if (s.text === undefined) return opts.defaultMs;
  const parsed = parseGoDuration(s.text.trim());
  if (!parsed.ok || parsed.ns < 0 || (parsed.ns === 0 && !opts.allowZero)) {
    throw invalid(
      s,
      `must be a ${opts.allowZero ? 'non-negative' : 'positive'} Go duration`,
      `give one such as 30s, 5m or 1h30m${opts.allowZero ? ' (0s turns it off)' : ''}`,
    );
  }
  return parsed.ns / 1e6;
}

/** A TCP port; 0 (pick a free one) only with allowZero. */
export function port(s: Setting, opts: { defaultPort: number; allowZero?: boolean }): number {
  if (s.text === undefined) return opts.defaultPort;
  const n = /^\d+$/.test(s.text.trim()) ? Number(s.text.trim()) : Number.NaN;
  if (!(n >= (opts.allowZero ? 0 : 1) && n <= 65535)) {
    throw invalid(
      s,
      `must be a TCP port number, ${opts.allowZero ? '0' : '1'} to 65535`,
      opts.allowZero ? 'give a port such as 8080, or 0 for a free one' : 'give a port such as 8080',
    );
  }
  return n;
}

/** A whole number at least min; undefined when unset and there is no default. */
export function integer(s: Setting, opts: { min: number; what: string }): number | undefined {
  if (s.text === undefined) return undefined;
  const n = /^\d+$/.test(s.text.trim()) ? Number(s.text.trim()) : Number.NaN;
  if (!(n >= opts.min) || !Number.isSafeInteger(n))
    throw invalid(s, `must be a whole number of ${opts.what}, at least ${opts.min}`, `give one such as 1024`);
  return n;
}

/** A whole number from min to max (a count, a size), or the default; the remedy says what it sets. */
export function wholeInRange(
  s: Setting,
  opts: { min: number; max: number; defaultValue: number; meaning: string },
): number {
  if (s.text === undefined) return opts.defaultValue;
  const n = /^\d+$/.test(s.text.trim()) ? Number(s.text.trim()) : Number.NaN;
  if (!(n >= opts.min && n <= opts.max))
    throw invalid(
      s,
      `must be a whole number from ${opts.min} to ${opts.max}`,
      `${opts.meaning}; leave it unset for the default (${opts.defaultValue})`,
    );
  return n;
}

/** One of a fixed set of words (case as given), or the default. */
export function oneOf<const T extends string>(s: Setting, values: readonly T[], defaultValue: T): T {
  if (s.text === undefined) return defaultValue;
  if ((values as readonly string[]).includes(s.text)) return s.text as T;
  throw invalid(
    s,
    `must be ${values.join(', ').replace(/, ([^,]*)$/, ' or $1')}`,
    `the default is ${defaultValue}`,
  );
}

/** true/false (also 1/0, yes/no; any case), or the default. */
export function bool(s: Setting, defaultValue: boolean): boolean {
  if (s.text === undefined) return defaultValue;
  const t = s.text.trim().toLowerCase();
  if (t === 'true' || t === '1' || t === 'yes') return true;
  if (t === 'false' || t === '0' || t === 'no') return false;
  throw invalid(s, 'must be true or false', `leave it unset for the default (${defaultValue})`);
}

/** An http(s) URL. */
export function httpUrl(s: Setting): string | undefined {
  if (s.text === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(s.text);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw invalid(
      s,
      'must be an http or https URL',
      'give one such as http://khrun-server.khrun.svc/externalCheckStatus',
    );
  return s.text;
}

/** A value that must be given: its text, or a ConfigError naming every place it can come from. */
export function required(s: Setting, what: string): string {
  if (s.text !== undefined && s.text.trim() !== '') return s.text;
  throw new ConfigError({
    setting: s.source,
    value: s.text,
    problem: `${what} is required`,
    remedy: `give ${s.places}`,
  });
}
