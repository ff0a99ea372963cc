import { parseArgs } from 'node:util';
import { buildCommand } from '../../lib/build/build-command.ts';
import { buildOptions, demoOptions, localUpOptions } from '../../lib/config/dev-options.ts';
import { demoCommand } from '../../lib/local/demo.ts';
import { localUpCommand } from '../../lib/local/local-up.ts';
import { type CliContext, signalOnTermination } from './context.ts';

// The developer commands. functions/cli.ts loads this module with a computed import that esbuild does not
// follow, so the local cluster (lib/local) and esbuild (lib/build) stay out of every product bundle; they
// run from a checkout (`npx khrun`, through tsx), never from the image.

/** `khrun local up`: the local cluster in the foreground. */
async function local(rest: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { dir: { type: 'string' } },
  });
  const options = localUpOptions({ flags: values, env: ctx.env, positionals, root: ctx.root });
  return localUpCommand({ ...options, signal: signalOnTermination(), write: ctx.write });
}

/** `khrun demo` (npm start): the example checks on a local cluster, once. */
async function demo(rest: string[], ctx: CliContext): Promise<number> {
  parseArgs({ args: rest, options: {} });
  const options = demoOptions({ flags: {}, env: ctx.env, root: ctx.root });
  return demoCommand({ ...options, signal: signalOnTermination(), write: ctx.write });
}

/** `khrun build`: the esbuild bundles of functions/. */
async function build(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: { outdir: { type: 'string' }, measure: { type: 'string' } },
  });
  return buildCommand({ ...buildOptions({ flags: values, env: ctx.env, root: ctx.root }), write: ctx.write });
}

export const devCommands: Record<string, (rest: string[], ctx: CliContext) => Promise<number>> = {
  local,
  demo,
  build,
};
