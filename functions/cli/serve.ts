import { parseArgs } from 'node:util';
import { serveCommand } from '../../lib/commands/serve.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { type CliContext, loggerFor, signalOnTermination } from './context.ts';

/** `khrun serve`: the report endpoint and status routes as a long-running server. */
export async function serve(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      namespaces: { type: 'string' },
      kubeconfig: { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'request-timeout-seconds': { type: 'string' },
      'drain-seconds': { type: 'string' },
      'no-status': { type: 'boolean' },
      'no-error-label': { type: 'boolean' },
      'error-label-max-bytes': { type: 'string' },
    },
  });
  const { logLevel, ...options } = serveOptions({ flags: values, env: ctx.env });
  return serveCommand({
    ...options,
    log: logPort(loggerFor(logLevel)),
    signal: signalOnTermination(),
    write: ctx.write,
  });
}
