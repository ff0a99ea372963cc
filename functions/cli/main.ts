import { ConfigError } from '../../lib/config/config-error.ts';
import { EXIT } from '../../lib/core/exit-codes.ts';
import { ALL_SPECS, PRODUCT_COMMANDS } from './commands.ts';
import type { CliContext, CommandBody } from './context.ts';
import { commandUsage, overview, parseCommand, UsageError } from './usage.ts';

/** A developer command's body, loaded only when it runs (functions/cli.ts says from where). */
export type DevLoader = (command: string) => Promise<CommandBody>;

/**
 * The khrun CLI without the process: `khrun help [COMMAND]`, `COMMAND --help`/`-h` print usage on stdout
 * (exit 0); an unknown command or flag, or a ConfigError while options are built, prints the message and
 * the command's usage on stderr (exit 2); anything else is the command's own exit code, or a throw.
 */
export async function main(argv: readonly string[], ctx: CliContext, loadDev: DevLoader): Promise<number> {
  const [command, ...rest] = argv;
  const fail = (message: string, usage: string) => {
    ctx.warn(`khrun: ${message}\n\n${usage}`);
    return EXIT.usage;
  };
  const find = (name: string) => ALL_SPECS.find((s) => s.name === name);
  if (command === undefined) {
    ctx.warn(overview(ALL_SPECS));
    return EXIT.usage;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic === undefined) {
      ctx.write(overview(ALL_SPECS));
      return EXIT.ok;
    }
    const spec = find(topic);
    if (!spec) return fail(`unknown command "${topic}"`, overview(ALL_SPECS));
    ctx.write(commandUsage(spec));
    return EXIT.ok;
  }
  const spec = find(command);
  if (!spec) return fail(`unknown command "${command}"`, overview(ALL_SPECS));
  try {
    const parsed = parseCommand(spec, rest);
    if (parsed.kind === 'help') {
      ctx.write(commandUsage(spec));
      return EXIT.ok;
    }
    for (const warning of parsed.warnings) ctx.warn(`khrun: ${warning}`);
    const product = PRODUCT_COMMANDS.find((c) => c.spec.name === command);
    const body = product ? product.run : await loadDev(command);
    return await body(parsed, ctx);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError)
      return fail(error.message, commandUsage(spec));
    throw error;
  }
}
