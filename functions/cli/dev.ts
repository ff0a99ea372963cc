import { buildCommand } from '@khrun/devkit/build/build-command.ts';
import { buildOptions, demoOptions, localUpOptions } from '@khrun/devkit/dev-options.ts';
import { demoCommand } from '@khrun/devkit/local/demo.ts';
import { localUpCommand } from '@khrun/devkit/local/local-up.ts';
import { type CommandBody, signalOnTermination } from './context.ts';
import { DEV_SPECS } from './dev-specs.ts';

// The developer commands' bodies (their flags are in dev-specs.ts). functions/cli.ts loads this module with
// a computed import that esbuild does not follow, so the devkit (infra/devkit: the local cluster, esbuild)
// stays out of every product bundle; it runs from a checkout (`npx khrun`, through tsx), never from the image.

/** `khrun local up`: the local cluster in the foreground. */
const local: CommandBody = async ({ values, positionals }, ctx) => {
  const options = localUpOptions({ flags: values, env: ctx.env, positionals, root: ctx.root });
  return localUpCommand({
    ...options,
    devCommands: DEV_SPECS.map((s) => s.name),
    signal: signalOnTermination(),
    write: ctx.write,
  });
};

/** `khrun demo` (npm start): the example checks on a local cluster, once. */
const demo: CommandBody = async (_, ctx) => {
  const options = demoOptions({ flags: {}, env: ctx.env, root: ctx.root });
  return demoCommand({ ...options, signal: signalOnTermination(), write: ctx.write });
};

/** `khrun build`: the esbuild bundles of functions/. */
const build: CommandBody = async ({ values }, ctx) =>
  buildCommand({ ...buildOptions({ flags: values, env: ctx.env, root: ctx.root }), write: ctx.write });

export const devCommands: Readonly<Record<string, CommandBody>> = { local, demo, build };
