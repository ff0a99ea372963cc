import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { serveCommand } from '../../lib/commands/serve.ts';
import { logPort } from '../../lib/core/log.ts';
import { type CliContext, kubeConfigOrFail, loggerFor, scopeFrom, signalOnTermination } from './context.ts';

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
  const port = Number(values.port ?? ctx.env.KHRUN_SERVE_PORT ?? '8080');
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return ctx.fail(`--port must be a TCP port, not "${values.port}"`);
  const numbers = [
    'max-body-bytes',
    'request-timeout-seconds',
    'drain-seconds',
    'error-label-max-bytes',
  ] as const;
  for (const key of numbers) {
    const v = values[key];
    if (v !== undefined && !(Number(v) >= 0)) return ctx.fail(`--${key} must be a number, not "${v}"`);
  }
  const kc = kubeConfigOrFail(ctx, { kubeconfig: values.kubeconfig });
  if (typeof kc === 'number') return kc;
  const log = loggerFor(ctx.env);
  return serveCommand({
    kc,
    scope: scopeFrom(values.namespaces, ctx.env),
    host: values.host ?? '0.0.0.0',
    port,
    identity: ctx.env.POD_NAME || `khrun-serve-${hostname()}`,
    maxBodyBytes: values['max-body-bytes'] ? Number(values['max-body-bytes']) : undefined,
    requestTimeoutMs: values['request-timeout-seconds']
      ? Number(values['request-timeout-seconds']) * 1000
      : undefined,
    drainMs: Number(values['drain-seconds'] ?? '10') * 1000,
    status: !values['no-status'],
    metrics: {
      suppressErrorLabel: values['no-error-label'] ?? false,
      errorLabelMaxBytes: values['error-label-max-bytes']
        ? Number(values['error-label-max-bytes'])
        : undefined,
    },
    log: logPort(log),
    signal: signalOnTermination(),
    write: ctx.write,
  });
}
