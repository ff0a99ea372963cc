import { ConfigError } from '../../lib/config/config-error.ts';
import { EXIT } from '../../lib/core/exit-codes.ts';
import { ApiServerUnreachableError } from '../../lib/kube/unreachable.ts';
import { ALL_SPECS, PRODUCT_COMMANDS } from './commands.ts';
import type { CliContext, CommandBody } from './context.ts';
import { commandUsage, overview, parseCommand, UsageError } from './usage.ts';

/** A developer command's body, loaded only when it runs (functions/cli.ts says from where). */
export type DevLoader = (command: string) => Promise<CommandBody>;

/** The line after a usage error that says where the usage is, instead of printing all of it (kubectl's words). */
export const LIST_HINT = "See 'khrun help' for the list of commands.";
export const usageHint = (command: string) => `See 'khrun ${command} --help' for usage.`;

/** One line for an API server that cannot be reached: which server (the kubeconfig's), why, what to check. */
export function unreachableLine(error: ApiServerUnreachableError): string {
  return (
    `cannot reach the Kubernetes API server at ${error.server} (${error.reason}): check that the cluster is ` +
    "running and reachable from here, and that the kubeconfig's context is the one meant " +
    '(kubectl config current-context; --context or --kubeconfig pick another)'
  );
}

/**
 * The khrun CLI without the process: `khrun help [COMMAND]`, `COMMAND --help`/`-h` print usage on stdout
 * (exit 0); `khrun --version` is `khrun version`; `khrun` alone prints the overview on stderr (exit 2); an
 * unknown command or flag, or a ConfigError while options are built, prints two lines on stderr, the
 * message and where the usage is (exit 2); an API server that cannot be reached is one line saying which
 * and what to check (exit 1); anything else is the command's own exit code, or a throw.
 */
export async function main(argv: readonly string[], ctx: CliContext, loadDev: DevLoader): Promise<number> {
  const [command, ...rest] = argv;
  const fail = (message: string, hint: string) => {
    ctx.warn(`khrun: ${message}\n${hint}`);
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
    if (!spec) return fail(`unknown command "${topic}"`, LIST_HINT);
    ctx.write(commandUsage(spec));
    return EXIT.ok;
  }
  // `khrun --version` is `khrun version`, as with most CLIs; the rest of the line is version's to parse.
  const spec = find(command === '--version' ? 'version' : command);
  if (!spec) return fail(`unknown command "${command}"`, LIST_HINT);
  try {
    const parsed = parseCommand(spec, rest);
    if (parsed.kind === 'help') {
      ctx.write(commandUsage(spec));
      return EXIT.ok;
    }
    for (const warning of parsed.warnings) ctx.warn(`khrun: ${warning}`);
    const product = PRODUCT_COMMANDS.find((c) => c.spec === spec);
    const body = product ? product.run : await loadDev(spec.name);
    return await body(parsed, ctx);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError)
      return fail(error.message, usageHint(spec.name));
    if (error instanceof ApiServerUnreachableError) {
      ctx.warn(`khrun: ${unreachableLine(error)}`);
      return EXIT.runnerError;
    }
    throw error;
  }
}
