import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildCommand } from '../../lib/build/build-command.ts';
import { demoCommand } from '../../lib/local/demo.ts';
import { localUpCommand } from '../../lib/local/local-up.ts';
import { type CliContext, cacheDir, signalOnTermination } from './context.ts';

/** `khrun local up`: the local cluster in the foreground. */
export async function local(rest: string[], ctx: CliContext): Promise<number> {
  if (rest[0] !== 'up') return ctx.fail('the local command has one subcommand: local up');
  const { values } = parseArgs({ args: rest.slice(1), options: { dir: { type: 'string' } } });
  return localUpCommand({
    dir: resolve(values.dir ?? '.khrun/local'),
    root: ctx.root,
    cacheDir: cacheDir(ctx.env),
    kubebuilderAssets: ctx.env.KUBEBUILDER_ASSETS || undefined,
    signal: signalOnTermination(),
    write: ctx.write,
  });
}

/** `khrun demo` (npm start): the example checks on a local cluster, once. */
export async function demo(_rest: string[], ctx: CliContext): Promise<number> {
  return demoCommand({
    root: ctx.root,
    cacheDir: cacheDir(ctx.env),
    kubebuilderAssets: ctx.env.KUBEBUILDER_ASSETS || undefined,
    signal: signalOnTermination(),
    write: ctx.write,
  });
}

/** `khrun build`: the esbuild bundles of functions/. */
export async function build(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: { outdir: { type: 'string' }, measure: { type: 'string' } },
  });
  const runs = Number(values.measure ?? '0');
  if (!Number.isInteger(runs) || runs < 0)
    return ctx.fail(`--measure takes a number of runs, not "${values.measure}"`);
  return buildCommand({
    root: ctx.root,
    outdir: resolve(values.outdir ?? join(ctx.root, 'dist')),
    measureRuns: runs,
    write: ctx.write,
  });
}
