import { createLogger, type LogLevel } from '../../lib/core/log.ts';

/** What every command gets: the repository root, the environment and where to write. */
export interface CliContext {
  root: string;
  env: NodeJS.ProcessEnv;
  write: (line: string) => void;
}

export function signalOnTermination(): AbortSignal {
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => controller.abort(new Error(`received ${sig}`)));
  }
  return controller.signal;
}

export const loggerFor = (level: LogLevel) => createLogger({ level });
