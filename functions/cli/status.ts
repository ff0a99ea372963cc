import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { describeCommand } from '../../lib/commands/describe.ts';
import { statusCommand } from '../../lib/commands/status.ts';
import { type CliContext, contextNamespace, kubeConfigOrFail } from './context.ts';

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
  const output = values.output ?? 'table';
  if (output !== 'table' && output !== 'wide' && output !== 'json')
    return ctx.fail(`-o must be json or wide, not "${output}"`);
  const kc = kubeConfigOrFail(ctx, { kubeconfig: values.kubeconfig, context: values.context });
  if (typeof kc === 'number') return kc;
  return statusCommand({
    kc,
    namespaces: (values.namespace ?? '').split(',').filter(Boolean),
    output,
    color: Boolean(process.stdout.isTTY) && !ctx.env.NO_COLOR,
    currentMaster: ctx.env.POD_NAME || `khrun-${hostname()}`,
    nowMs: () => Date.now(),
    write: ctx.write,
  });
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
  const [name, ...extra] = positionals;
  if (!name || extra.length > 0) return ctx.fail('describe needs exactly one CHECK name');
  const kc = kubeConfigOrFail(ctx, { kubeconfig: values.kubeconfig, context: values.context });
  if (typeof kc === 'number') return kc;
  return describeCommand({
    kc,
    namespace: values.namespace ?? contextNamespace(kc) ?? 'default',
    name,
    color: Boolean(process.stdout.isTTY) && !ctx.env.NO_COLOR,
    nowMs: () => Date.now(),
    write: ctx.write,
  });
}
