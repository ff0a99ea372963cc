import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { lambdaDispatcher } from '../lib/aws/lambda-invoke.ts';
import { buildCommand } from '../lib/build/build-command.ts';
import { parseGoDuration } from '../lib/check/duration.ts';
import { demoCommand } from '../lib/cli/demo.ts';
import { describeCommand } from '../lib/cli/describe-command.ts';
import { EXIT } from '../lib/cli/exit-codes.ts';
import { localUpCommand } from '../lib/cli/local-up.ts';
import { runCommand } from '../lib/cli/run-command.ts';
import { statusCommand } from '../lib/cli/status-command.ts';
import { loadKubeConfig } from '../lib/kube/load-config.ts';
import { createLogger, type LogLevel, logPort } from '../lib/log/logger.ts';
import type { NamespaceScope } from '../lib/report/kube-lookup.ts';
import { DEFAULT_DUE_TIMINGS } from '../lib/schedule/due.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../lib/schedule/run-job.ts';
import { syncCommand } from '../lib/schedule/sync-command.ts';
import { syncKube } from '../lib/schedule/sync-kube.ts';
import { tickCommand } from '../lib/schedule/tick-command.ts';
import { jobDispatcher, readRunnerTemplate, tickKube } from '../lib/schedule/tick-kube.ts';
import { serveCommand } from '../lib/server/serve-command.ts';

// The khrun CLI: parses flags and environment, builds the real ports, and maps results to exit codes.
// All logic lives in lib/.

const root = resolve(import.meta.dirname, '..');
const env = process.env;
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

/** --namespaces A,B (or KHRUN_NAMESPACES); empty means every namespace. */
function scopeFrom(flag: string | undefined): NamespaceScope {
  const list = (flag ?? env.KHRUN_NAMESPACES ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return list.length ? { namespaces: list } : 'all';
}

function durationFlagMs(text: string | undefined, fallbackMs: number): number | undefined {
  if (text === undefined) return fallbackMs;
  const parsed = parseGoDuration(text);
  return parsed.ok && parsed.ns > 0 ? parsed.ns / 1e6 : undefined;
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
      // Test failpoint (fault suite only; unset in production): KHRUN_FAILPOINT_KILL_AT=<phase> SIGKILLs this
      // process the moment the iteration reports that phase ('claimed', 'pod created', 'report received',
      // 'recording', ...), so a test can kill the runner at an exact point instead of after a guessed delay.
      const killAt = env.KHRUN_FAILPOINT_KILL_AT;
      const failpoint = killAt
        ? (phase: string) => {
            if (phase === killAt) process.kill(process.pid, 'SIGKILL');
          }
        : undefined;
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
        onPhase: failpoint,
      });
    }
    case 'status': {
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
        return fail(`-o must be json or wide, not "${output}"`);
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig({ kubeconfig: values.kubeconfig, context: values.context });
      } catch (error) {
        return fail((error as Error).message);
      }
      return statusCommand({
        kc,
        namespaces: (values.namespace ?? '').split(',').filter(Boolean),
        output,
        color: Boolean(process.stdout.isTTY) && !env.NO_COLOR,
        currentMaster: env.POD_NAME || `khrun-${hostname()}`,
        nowMs: () => Date.now(),
        write,
      });
    }
    case 'describe': {
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
      if (!name || extra.length > 0) return fail('describe needs exactly one CHECK name');
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig({ kubeconfig: values.kubeconfig, context: values.context });
      } catch (error) {
        return fail((error as Error).message);
      }
      return describeCommand({
        kc,
        namespace: values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default',
        name,
        color: Boolean(process.stdout.isTTY) && !env.NO_COLOR,
        nowMs: () => Date.now(),
        write,
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
    case 'serve': {
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
      const port = Number(values.port ?? env.KHRUN_SERVE_PORT ?? '8080');
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        return fail(`--port must be a TCP port, not "${values.port}"`);
      const numbers = [
        'max-body-bytes',
        'request-timeout-seconds',
        'drain-seconds',
        'error-label-max-bytes',
      ] as const;
      for (const key of numbers) {
        const v = values[key];
        if (v !== undefined && !(Number(v) >= 0)) return fail(`--${key} must be a number, not "${v}"`);
      }
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig({ kubeconfig: values.kubeconfig });
      } catch (error) {
        return fail((error as Error).message);
      }
      const log = createLogger({ level: (env.POWERTOOLS_LOG_LEVEL as LogLevel | undefined) ?? 'INFO' });
      return serveCommand({
        kc,
        scope: scopeFrom(values.namespaces),
        host: values.host ?? '0.0.0.0',
        port,
        identity: env.POD_NAME || `khrun-serve-${hostname()}`,
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
        write,
      });
    }
    case 'tick': {
      const { values } = parseArgs({
        args: rest,
        options: {
          namespaces: { type: 'string' },
          kubeconfig: { type: 'string' },
          mode: { type: 'string' },
          function: { type: 'string' },
          'job-namespace': { type: 'string' },
          'pod-template': { type: 'string' },
          'dispatch-ttl': { type: 'string' },
          'first-run-jitter': { type: 'string' },
          output: { type: 'string', short: 'o' },
        },
      });
      const output = values.output ?? 'text';
      if (output !== 'text' && output !== 'json')
        return fail(`--output must be text or json, not "${output}"`);
      const mode = values.mode ?? env.KHRUN_DISPATCH ?? 'job';
      if (mode !== 'job' && mode !== 'lambda') return fail(`--mode must be job or lambda, not "${mode}"`);
      const dispatchTtlMs = durationFlagMs(values['dispatch-ttl'], DEFAULT_DUE_TIMINGS.dispatchTtlMs);
      if (dispatchTtlMs === undefined) return fail(`--dispatch-ttl must be a Go duration such as 5m`);
      const jitterText = values['first-run-jitter'] ?? env.KHRUN_FIRST_RUN_JITTER;
      const maxFirstRunJitterMs = /^0+(s|m|h|ms)?$/.test(jitterText ?? '')
        ? 0
        : durationFlagMs(jitterText, DEFAULT_DUE_TIMINGS.maxFirstRunJitterMs);
      if (maxFirstRunJitterMs === undefined)
        return fail('--first-run-jitter must be a Go duration such as 1m or 0s');
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig({ kubeconfig: values.kubeconfig });
      } catch (error) {
        return fail((error as Error).message);
      }
      const log = logPort(
        createLogger({ level: (env.POWERTOOLS_LOG_LEVEL as LogLevel | undefined) ?? 'INFO' }),
      );
      let dispatcher: Parameters<typeof tickCommand>[0]['dispatcher'];
      if (mode === 'lambda') {
        const functionName = values.function ?? env.RUN_CHECK_FUNCTION;
        const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
        if (!functionName || !region)
          return fail('lambda mode needs --function (or RUN_CHECK_FUNCTION) and AWS_REGION');
        dispatcher = lambdaDispatcher({ functionName, region, credentials: defaultProvider() });
      } else {
        const namespace =
          values['job-namespace'] ??
          env.POD_NAMESPACE ??
          kc.getContextObject(kc.getCurrentContext())?.namespace ??
          'kuberhealthy';
        const template = await readRunnerTemplate(kc, namespace, values['pod-template'] ?? 'khrun-runner');
        dispatcher = jobDispatcher({ kc, namespace, template, jobOptions: DEFAULT_RUN_JOB_OPTIONS });
      }
      return tickCommand({
        kube: tickKube(kc),
        dispatcher,
        scope: scopeFrom(values.namespaces),
        identity: env.POD_NAME || `khrun-tick-${hostname()}`,
        timings: { ...DEFAULT_DUE_TIMINGS, dispatchTtlMs, maxFirstRunJitterMs },
        output,
        log,
        write,
      });
    }
    case 'sync': {
      const { values } = parseArgs({
        args: rest,
        options: {
          namespaces: { type: 'string' },
          kubeconfig: { type: 'string' },
          'dry-run': { type: 'boolean' },
          output: { type: 'string', short: 'o' },
          'pod-template': { type: 'string' },
          'template-namespace': { type: 'string' },
        },
      });
      const output = values.output ?? 'text';
      if (output !== 'text' && output !== 'json' && output !== 'yaml')
        return fail(`-o must be text, yaml or json, not "${output}"`);
      let kc: ReturnType<typeof loadKubeConfig>;
      try {
        kc = loadKubeConfig({ kubeconfig: values.kubeconfig });
      } catch (error) {
        return fail((error as Error).message);
      }
      const templateNamespace =
        values['template-namespace'] ??
        env.POD_NAMESPACE ??
        kc.getContextObject(kc.getCurrentContext())?.namespace ??
        'kuberhealthy';
      const template = await readRunnerTemplate(
        kc,
        templateNamespace,
        values['pod-template'] ?? 'khrun-runner',
      );
      return syncCommand({
        kube: syncKube(kc),
        scope: scopeFrom(values.namespaces),
        template,
        jobOptions: DEFAULT_RUN_JOB_OPTIONS,
        dryRun: values['dry-run'] ?? false,
        output,
        log: logPort(createLogger({ level: (env.POWERTOOLS_LOG_LEVEL as LogLevel | undefined) ?? 'INFO' })),
        write,
      });
    }
    case 'build': {
      const { values } = parseArgs({
        args: rest,
        options: { outdir: { type: 'string' }, measure: { type: 'string' } },
      });
      const runs = Number(values.measure ?? '0');
      if (!Number.isInteger(runs) || runs < 0)
        return fail(`--measure takes a number of runs, not "${values.measure}"`);
      return buildCommand({
        root,
        outdir: resolve(values.outdir ?? join(root, 'dist')),
        measureRuns: runs,
        write,
      });
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
