import { resolve } from 'node:path';
import { EXIT } from '../lib/commands/exit-codes.ts';
import type { CliContext } from './cli/context.ts';
import { build, demo, local } from './cli/local.ts';
import { run } from './cli/run.ts';
import { sync, tick } from './cli/schedule.ts';
import { serve } from './cli/serve.ts';
import { describe, status } from './cli/status.ts';

// The khrun CLI: each command's flags and environment are parsed in functions/cli/, which builds the
// real ports and calls lib/; this file dispatches and maps failures to exit codes.

const USAGE = `usage: khrun <command> [flags]

commands:
  run --check NAME [--namespace NS] [--kubeconfig PATH] [--output json]
                      run one iteration of a khcheck (env CHECK_NAME / CHECK_NAMESPACE also work)
  status [--namespace NS[,NS]] [-o json|wide] [--kubeconfig PATH]
                      the checks and their last results, like kubectl get (-o json: Kuberhealthy v2's status JSON)
  describe CHECK [--namespace NS] [--kubeconfig PATH]
                      a check, its active or last run, errors, history and events
  local up [--dir DIR]
                      run the local cluster in the foreground; writes DIR/kubeconfig (default .khrun/local)
  demo                start the local cluster, run the example checks once, print the outcomes, tear down
  serve [--port 8080] [--host 0.0.0.0] [--namespaces A,B] [--drain-seconds 10]
        [--no-status] [--no-error-label] [--error-label-max-bytes N]
                      the report endpoint as a long-running server, with the status JSON and page at /,
                      /status, /json and Prometheus metrics at /metrics (health: /healthz, /readyz)
  tick [--namespaces A,B] [--mode job|lambda] [--first-run-jitter 1m] [--output json]
                      dispatch one invocation per due check: a Job from the khrun-runner PodTemplate
                      (job mode), or an async invocation of --function (lambda mode)
  sync [--namespaces A,B] [--dry-run] [-o yaml|json]
                      one CronJob per khcheck (schedule from runInterval); removes those of deleted khchecks
  build [--outdir DIR] [--measure N]
                      bundle functions/ (CLI and Lambda handlers) into DIR (default dist/), print sizes
                      and, with --measure, each bundle's cold import time over N fresh processes
`;

const commands: Record<string, (rest: string[], ctx: CliContext) => Promise<number>> = {
  run,
  status,
  describe,
  local,
  demo,
  serve,
  tick,
  sync,
  build,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const ctx: CliContext = {
    root: resolve(import.meta.dirname, '..'),
    env: process.env,
    write: (line) => process.stdout.write(`${line}\n`),
    fail: (message) => {
      process.stderr.write(`khrun: ${message}\n\n${USAGE}`);
      return EXIT.usage;
    },
  };
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    ctx.write(USAGE);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  const handler = commands[command];
  if (!handler) return ctx.fail(`unknown command "${command}"`);
  try {
    return await handler(rest, ctx);
  } catch (error) {
    // node:util parseArgs rejects unknown or malformed flags: a usage error, not a runner failure.
    if (String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS'))
      return ctx.fail((error as Error).message);
    throw error;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`khrun: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = EXIT.runnerError;
  },
);
