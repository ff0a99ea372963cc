import { parseArgs } from 'node:util';
import { describeCommand } from '../../lib/commands/describe.ts';
import { statusCommand } from '../../lib/commands/status.ts';
import { describeOptions, statusOptions } from '../../lib/config/status-options.ts';
import type { CliContext } from './context.ts';

/** `khrun status`: the checks and their last results. */
export async function status(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      namespace: { type: 'string', short: 'n' },
      output: { type: 'string', short: 'o' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
    },
  });
  const options = statusOptions({ flags: values, env: ctx.env, terminal: Boolean(process.stdout.isTTY) });
  return statusCommand({ ...options, nowMs: () => Date.now(), write: ctx.write });
}

/** `khrun describe CHECK`: one check in detail. */
export async function describe(rest: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
    },
  });
  const options = describeOptions({
    flags: values,
    env: ctx.env,
    positionals,
    terminal: Boolean(process.stdout.isTTY),
  });
  return describeCommand({ ...options, nowMs: () => Date.now(), write: ctx.write });
}
