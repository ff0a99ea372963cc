import { hostname } from 'node:os';
import { LOG_LEVELS, type LogLevel } from '../core/log.ts';
import { ConfigError } from './config-error.ts';
import type { ConfigInput, Flags } from './setting.ts';
import { setting } from './setting.ts';

/** POWERTOOLS_LOG_LEVEL (any case), default INFO. */
export function logLevel(input: ConfigInput<Flags>): LogLevel {
  const s = setting(input, { env: ['POWERTOOLS_LOG_LEVEL'] });
  if (s.text === undefined) return 'INFO';
  const level = s.text.trim().toUpperCase();
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogLevel;
  throw new ConfigError({
    setting: s.source,
    value: s.text,
    problem: `must be one of ${LOG_LEVELS.join(', ')}`,
    remedy: 'leave it unset for INFO',
  });
}

/**
 * Who this process is, written where v2 wrote its pod name (AuthoritativePod, CurrentMaster, dispatch
 * claims): POD_NAME in a pod, else `<prefix>-<hostname>`.
 */
export function identity(input: ConfigInput<Flags>, prefix: string): string {
  return setting(input, { env: ['POD_NAME'] }).text ?? `${prefix}-${hostname()}`;
}
