import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildCommand } from '../lib/build/build-command.ts';
import { demoCommand } from '../lib/cli/demo.ts';
import { EXIT } from '../lib/cli/exit-codes.ts';
import { localUpCommand } from '../lib/cli/local-up.ts';
import { runCommand } from '../lib/cli/run-command.ts';
import { loadKubeConfig } from '../lib/kube/load-config.ts';
import { createLogger, type LogLevel, logPort } from '../lib/log/logger.ts';

// The khrun CLI: parses flags and environment, builds the real ports, and maps results to exit codes.
// All logic lives in lib/.

const root = resolve(import.meta.dirname, '..');
const env = process.env;
const USAGE = `usage: khrun <command> [flags]

commands:
  run --check NAME [--namespace NS] [--kubeconfig PATH] [--output json]
                      run one iteration of a khcheck (env CHECK_NAME / CHECK_NAMESPACE also work)
  local up [--dir DIR]
                      run the local cluster in the foreground; writes DIR/kubeconfig (default .khrun/local)
  demo                start the local cluster, run the example checks once, print the outcomes, tear down
  build [--outdir DIR] [--measure N]
                      bundle functions/ (CLI and Lambda handlers) into DIR (default dist/), print sizes
                      and, with --measure, each bundle's cold import time over N fresh processes
`;

function cacheDir(): string {
  return env.KHRUN_CACHE_DIR || join(env.XDG_CACHE_HOME || join(env.HOME || '/root', '.cache'), 'khrun');
}

function signalOnTermination(): AbortSignal {
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => controller.abort(new Error(`received ${sig}`)));
  }
  return controller.signal;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const write = (line: string) => process.stdout.write(`${line}\n`);
  const fail = (message: string) => {
    process.stderr.write(`khrun: ${message}\n\n${USAGE}`);
    return EXIT.usage;
  };
  switch (command) {
    case 'run': {
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
      const checkName = values.check ?? env.CHECK_NAME;
      if (!checkName) return fail('run needs --check NAME (or CHECK_NAME)');
      const output = values.output ?? 'text';
      if (output !== 'text' && output !== 'json')
        return fail(`--output must be text or json, not "${output}"`);
      const portText = values['report-port'] ?? env.KHRUN_REPORT_PORT ?? '0';
      const reportPort = Number(portText);
      if (!Number.isInteger(reportPort) || reportPort < 0 || reportPort > 65535) {
        return fail(`the report port must be a TCP port number (0 picks a free one), not "${portText}"`);
      }
      const leaseText = env.KHRUN_LEASE_SECONDS;
      const leaseMs = leaseText ? Number(leaseText) * 1000 : undefined;
      if (leaseMs !== undefined && !(leaseMs > 0))
        return fail(`KHRUN_LEASE_SECONDS must be a positive number, not "${leaseText}"`);
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig({ kubeconfig: values.kubeconfig, context: values.context });
      } catch (error) {
        return fail((error as Error).message);
      }
      const namespace =
        values.namespace ??
        env.CHECK_NAMESPACE ??
        kc.getContextObject(kc.getCurrentContext())?.namespace ??
        'default';
      const log = createLogger({ level: (env.POWERTOOLS_LOG_LEVEL as LogLevel | undefined) ?? 'INFO' });
      log.appendPersistentKeys({ check: checkName, namespace });
      const interactive = process.stderr.isTTY;
      return runCommand({
        kc,
        namespace,
        checkName,
        runner: env.POD_NAME || `khrun-${hostname()}`,
        externalReportingUrl: env.KH_EXTERNAL_REPORTING_URL || undefined,
        reportHost: values['report-host'] ?? env.KHRUN_REPORT_HOST,
        reportPort,
        podIp: env.POD_IP,
        output,
        log: logPort(log),
        signal: signalOnTermination(),
        leaseMs,
        write,
        progress: interactive ? (line) => process.stderr.write(`${line}\n`) : undefined,
      });
    }
    case 'local': {
      if (rest[0] !== 'up') return fail('the local command has one subcommand: local up');
      const { values } = parseArgs({ args: rest.slice(1), options: { dir: { type: 'string' } } });
      return localUpCommand({
        dir: resolve(values.dir ?? '.khrun/local'),
        root,
        cacheDir: cacheDir(),
        kubebuilderAssets: env.KUBEBUILDER_ASSETS || undefined,
        signal: signalOnTermination(),
        write,
      });
    }
    case 'demo':
      return demoCommand({
        root,
        cacheDir: cacheDir(),
        kubebuilderAssets: env.KUBEBUILDER_ASSETS || undefined,
        signal: signalOnTermination(),
        write,
      });
    case 'build': {
      const { values } = parseArgs({
        args: rest,
        options: { outdir: { type: 'string' }, measure: { type: 'string' } },
      });
      const runs = Number(values.measure ?? '0');
      if (!Number.isInteger(runs) || runs < 0) return fail(`--measure takes a number of runs, not "${values.measure}"`);
      return buildCommand({ root, outdir: resolve(values.outdir ?? join(root, 'dist')), measureRuns: runs, write });
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      write(USAGE);
      return command === undefined ? EXIT.usage : EXIT.ok;
    default:
      return fail(`unknown command "${command}"`);
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
