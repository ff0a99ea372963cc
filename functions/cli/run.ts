import { parseArgs } from 'node:util';
import { runCommand } from '../../lib/commands/run.ts';
import { runOptions } from '../../lib/config/run-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { type CliContext, loggerFor, signalOnTermination } from './context.ts';

/** `khrun run`: one iteration of a khcheck. */
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
  const { logLevel, killAtPhase, ...options } = runOptions({ flags: values, env: ctx.env });
  const log = loggerFor(logLevel);
  log.appendPersistentKeys({ check: options.checkName, namespace: options.namespace });
  return runCommand({
    ...options,
    log: logPort(log),
    signal: signalOnTermination(),
    write: ctx.write,
    progress: process.stderr.isTTY ? (line) => process.stderr.write(`${line}\n`) : undefined,
    // The fault suite's failpoint: SIGKILL at an exact phase instead of after a guessed delay.
    onPhase: killAtPhase
      ? (phase) => {
          if (phase === killAtPhase) process.kill(process.pid, 'SIGKILL');
        }
      : undefined,
  });
}
