import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { runCommand } from '../../lib/commands/run.ts';
import { logPort } from '../../lib/core/log.ts';
import {
  type CliContext,
  contextNamespace,
  kubeConfigOrFail,
  loggerFor,
  signalOnTermination,
} from './context.ts';

/** `khrun run`: flags and environment (CHECK_NAME, KH_EXTERNAL_REPORTING_URL, ...) to one iteration. */
export async function run(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      check: { type: 'string' },
      namespace: { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      output: { type: 'string', short: 'o' },
      'report-host': { type: 'string' },
      'report-port': { type: 'string' },
    },
  });
  const checkName = values.check ?? ctx.env.CHECK_NAME;
  if (!checkName) return ctx.fail('run needs --check NAME (or CHECK_NAME)');
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json')
    return ctx.fail(`--output must be text or json, not "${output}"`);
  const portText = values['report-port'] ?? ctx.env.KHRUN_REPORT_PORT ?? '0';
  const reportPort = Number(portText);
  if (!Number.isInteger(reportPort) || reportPort < 0 || reportPort > 65535) {
    return ctx.fail(`the report port must be a TCP port number (0 picks a free one), not "${portText}"`);
  }
  const leaseText = ctx.env.KHRUN_LEASE_SECONDS;
  const leaseMs = leaseText ? Number(leaseText) * 1000 : undefined;
  if (leaseMs !== undefined && !(leaseMs > 0))
    return ctx.fail(`KHRUN_LEASE_SECONDS must be a positive number, not "${leaseText}"`);
  const kc = kubeConfigOrFail(ctx, { kubeconfig: values.kubeconfig, context: values.context });
  if (typeof kc === 'number') return kc;
  const namespace = values.namespace ?? ctx.env.CHECK_NAMESPACE ?? contextNamespace(kc) ?? 'default';
  const log = loggerFor(ctx.env);
  log.appendPersistentKeys({ check: checkName, namespace });
  const interactive = process.stderr.isTTY;
  // Test failpoint (fault suite only; unset in production): KHRUN_FAILPOINT_KILL_AT=<phase> SIGKILLs this
  // process the moment the iteration reports that phase ('claimed', 'pod created', 'report received',
  // 'recording', ...), so a test can kill the runner at an exact point instead of after a guessed delay.
  const killAt = ctx.env.KHRUN_FAILPOINT_KILL_AT;
  const failpoint = killAt
    ? (phase: string) => {
        if (phase === killAt) process.kill(process.pid, 'SIGKILL');
      }
    : undefined;
  return runCommand({
    kc,
    namespace,
    checkName,
    runner: ctx.env.POD_NAME || `khrun-${hostname()}`,
    externalReportingUrl: ctx.env.KH_EXTERNAL_REPORTING_URL || undefined,
    reportHost: values['report-host'] ?? ctx.env.KHRUN_REPORT_HOST,
    reportPort,
    podIp: ctx.env.POD_IP,
    output,
    log: logPort(log),
    signal: signalOnTermination(),
    leaseMs,
    write: ctx.write,
    progress: interactive ? (line) => process.stderr.write(`${line}\n`) : undefined,
    onPhase: failpoint,
  });
}
