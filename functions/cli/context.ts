import { createLogger, type LogLevel } from '../../lib/core/log.ts';
import type { CommandSpec } from './flags.ts';
import type { ParsedArgs } from './usage.ts';

/** What every command gets: the repository root, the environment and where to write. */
export interface CliContext {
  root: string;
  env: NodeJS.ProcessEnv;
  /** A line of the command's output (stdout). */
  write: (line: string) => void;
  /** Anything but the output (stderr): warnings, errors, usage errors, progress, the log's JSON lines. */
  warn: (line: string) => void;
}

export function signalOnTermination(): AbortSignal {
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => controller.abort(new Error(`received ${sig}`)));
  }
  return controller.signal;
}

/** The CLI's logger: JSON lines on stderr (ctx.warn), whatever their level, so stdout holds only the output. */
export const loggerFor = (ctx: Pick<CliContext, 'warn'>, level: LogLevel) =>
  createLogger({ level, write: ctx.warn });

/** A command body: the parsed command line in, an exit code out. */
export type CommandBody = (args: ParsedArgs, ctx: CliContext) => Promise<number>;

/** A command as the dispatcher sees it: its description (flags, usage) and its body. */
export interface CliCommand {
  spec: CommandSpec;
  run: CommandBody;
}
