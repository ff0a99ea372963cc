import type { LogItem } from '@aws-lambda-powertools/logger';
import { Logger } from '@aws-lambda-powertools/logger';

/** The subset of the Powertools logger the engines use. */
export interface Log {
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
  debug(message: string, extra?: Record<string, unknown>): void;
}

/** A log whose every line also carries `keys` (runs sharing one process's logger, each naming its check). */
export function logWithKeys(log: Log, keys: Record<string, unknown>): Log {
  return {
    info: (m, e) => log.info(m, { ...keys, ...e }),
    warn: (m, e) => log.warn(m, { ...keys, ...e }),
    error: (m, e) => log.error(m, { ...keys, ...e }),
    debug: (m, e) => log.debug(m, { ...keys, ...e }),
  };
}

/** Powertools' levels, as POWERTOOLS_LOG_LEVEL takes them. */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * A Powertools logger whose every record, whatever its level, is one JSON line given to `write`. The class
 * closes over `write` because Powertools prints what was logged during its constructor from inside it,
 * before a subclass's own fields exist.
 */
function lineLogger(options: ConstructorParameters<typeof Logger>[0], write: (line: string) => void): Logger {
  class LineLogger extends Logger {
    protected override printLog(_logLevel: number, log: LogItem): void {
      log.prepareForPrint();
      write(JSON.stringify(log.getAttributes(), this.getJsonReplacer()));
    }
  }
  return new LineLogger(options);
}

/**
 * Structured JSON logs (Powertools), one line per state change. Created once per process at the edge and
 * passed in; per-iteration keys (check, namespace) are appended by the caller. Without `write`, Powertools'
 * own routing (INFO and DEBUG on stdout, WARN and above on stderr: a Lambda handler, where CloudWatch reads
 * both); with it, every record goes there as one line (the CLI: stderr, so stdout holds only its output).
 */
export function createLogger(
  opts: { service?: string; level?: LogLevel; write?: (line: string) => void } = {},
): Logger {
  const options = { serviceName: opts.service ?? 'khrun', logLevel: opts.level ?? 'INFO' };
  return opts.write ? lineLogger(options, opts.write) : new Logger(options);
}

/** A logger that drops everything, for tests and quiet modes. */
export const silentLog: Log = { info() {}, warn() {}, error() {}, debug() {} };

/** The core's narrow Log port over a Powertools logger. */
export function logPort(logger: Logger): Log {
  const emit =
    (fn: (msg: string, extra: Record<string, unknown>) => void) =>
    (message: string, extra?: Record<string, unknown>) =>
      fn(message, extra ?? {});
  return {
    info: emit((m, e) => logger.info(m, e)),
    warn: emit((m, e) => logger.warn(m, e)),
    error: emit((m, e) => logger.error(m, e)),
    debug: emit((m, e) => logger.debug(m, e)),
  };
}
