import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../lib/config/config-error.ts';
import { EXIT } from '../lib/core/exit-codes.ts';
import type { CliContext } from './cli/context.ts';
import { run } from './cli/run.ts';
import { sync, tick } from './cli/schedule.ts';
import { serve } from './cli/serve.ts';
import { describe, status } from './cli/status.ts';

// The khrun CLI: each command parses its flags in functions/cli/, turns flags and environment into options
// with lib/config (a bad value is a ConfigError: exit 2), and calls lib/commands; this file dispatches and
// maps failures to exit codes.

const USAGE = `usage: khrun <command> [flags]

commands:
  run --check NAME [--namespace NS] [--kubeconfig PATH] [--output json]
                      run one iteration of a khcheck (env CHECK_NAME / CHECK_NAMESPACE also work)
  status [--namespace NS[,NS]] [-o json|wide] [--kubeconfig PATH]
                      the checks and their last results, like kubectl get (-o json: Kuberhealthy v2's status JSON)
  describe CHECK [--namespace NS] [--kubeconfig PATH]
                      a check, its active or last run, errors, history and events
  local up [--dir DIR]
                      (dev) run the local cluster in the foreground; writes DIR/kubeconfig (default .khrun/local)
  demo                (dev) start the local cluster, run the example checks once, print the outcomes, tear down
  serve [--port 8080] [--host 0.0.0.0] [--namespaces A,B] [--drain-seconds 10]
        [--no-status] [--no-error-label] [--error-label-max-bytes N]
                      the report endpoint as a long-running server, with the status JSON and page at /,
                      /status, /json and Prometheus metrics at /metrics (health: /healthz, /readyz)
  tick [--namespaces A,B] [--mode job|lambda] [--first-run-jitter 1m] [--runner-namespace NS] [--output json]
                      dispatch one invocation per due check: a Job from the khrun-runner PodTemplate of
                      the runner namespace (job mode), or an async invocation of --function (lambda mode)
  sync [--namespaces A,B] [--dry-run] [-o yaml|json] [--runner-namespace NS]
                      one CronJob per khcheck (schedule from runInterval); removes those of deleted khchecks
  build [--outdir DIR] [--measure N]
                      (dev) bundle functions/ (CLI and Lambda handlers) into DIR (default dist/), print
                      sizes and, with --measure, each bundle's cold import time over N fresh processes

The runner namespace (where khrun is installed) is --runner-namespace, else KHRUN_NAMESPACE, else
POD_NAMESPACE, else kuberhealthy. (dev) commands run from a checkout (npx khrun), not from the image.
`;

/**
 * The developer commands' module, named by a computed specifier so that esbuild does not follow it: the
 * product bundle (dist/khrun.mjs, the image) then carries neither the local cluster nor esbuild. From a
 * checkout (functions/khrun.mjs, through tsx) it is found next to this file.
 */
const DEV_MODULE = ['.', 'cli', 'dev.ts'].join('/');
const DEV_COMMANDS = new Set(['local', 'demo', 'build']);

async function devCommand(command: string, rest: string[], ctx: CliContext): Promise<number> {
  const url = new URL(DEV_MODULE, import.meta.url);
  if (!existsSync(fileURLToPath(url))) {
    throw new ConfigError({
      setting: command,
      problem: `is a developer command, not part of this build (${fileURLToPath(import.meta.url)})`,
      remedy: `run it from a khrun checkout: npm ci, then npx khrun ${command}`,
    });
  }
  const { devCommands } = (await import(url.href)) as typeof import('./cli/dev.ts');
  const handler = Object.hasOwn(devCommands, command) ? devCommands[command] : undefined;
  if (!handler) throw new Error(`${DEV_MODULE} has no command ${command}`);
  return handler(rest, ctx);
}

const commands: Record<string, (rest: string[], ctx: CliContext) => Promise<number>> = {
  run,
  status,
  describe,
  serve,
  tick,
  sync,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const ctx: CliContext = {
    root: resolve(import.meta.dirname, '..'),
    env: process.env,
    write: (line) => process.stdout.write(`${line}\n`),
  };
  const fail = (message: string) => {
    process.stderr.write(`khrun: ${message}\n\n${USAGE}`);
    return EXIT.usage;
  };
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    ctx.write(USAGE);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  const handler = Object.hasOwn(commands, command) ? commands[command] : undefined;
  if (!handler && !DEV_COMMANDS.has(command)) return fail(`unknown command "${command}"`);
  try {
    return handler ? await handler(rest, ctx) : await devCommand(command, rest, ctx);
  } catch (error) {
    if (error instanceof ConfigError) return fail(error.message);
    // node:util parseArgs rejects unknown or malformed flags: a usage error, not a runner failure.
    if (String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS'))
      return fail((error as Error).message);
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
