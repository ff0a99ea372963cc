import { serveCommand } from '../../lib/commands/serve.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { type CliCommand, loggerFor, signalOnTermination } from './context.ts';
import { commonFlags, OLD_NAMESPACES } from './flags.ts';

/** `khrun serve`: the report endpoint and status routes as a long-running server. */
export const serve: CliCommand = {
  spec: {
    name: 'serve',
    summary: 'the report endpoint as a long-running server, with the status routes and metrics',
    description:
      'Serves the report endpoint (/externalCheckStatus) for checker pods, the status JSON and page at /, ' +
      '/status and /json, Prometheus metrics at /metrics, and /healthz and /readyz; with a trigger token ' +
      '(KHRUN_TRIGGER_TOKEN_FILE or KHRUN_TRIGGER_TOKEN), POST /api/run starts a run of a check. On SIGTERM ' +
      '/readyz answers 503, requests and triggered runs in flight get the drain time, then it exits 0.',
    examples: [
      {
        what: 'the report endpoint, status page and metrics on port 8080',
        line: 'khrun serve --port 8080',
      },
      {
        what: 'for one namespace, taking unsigned v2-style reports',
        line: 'khrun serve -n checks --allow-unsigned-reports',
      },
    ],
    flags: {
      ...commonFlags({
        namespaces: {
          kind: 'list',
          help: 'only reports and status of these namespaces (else KHRUN_NAMESPACES, else every namespace)',
          allHelp: 'every namespace, whatever KHRUN_NAMESPACES says',
        },
      }),
      host: {
        type: 'string',
        value: 'HOST',
        help: 'the address to listen on (else KHRUN_SERVE_HOST, else 0.0.0.0)',
      },
      port: {
        type: 'string',
        value: 'PORT',
        help: 'the port (else KHRUN_SERVE_PORT, else 8080; 0: a free one)',
      },
      'drain-seconds': {
        type: 'string',
        value: 'N',
        help: 'time for requests in flight after SIGTERM (default 10)',
      },
      'max-body-bytes': {
        type: 'string',
        value: 'N',
        help: 'the largest report body accepted (default 256 KiB)',
      },
      'request-timeout-seconds': {
        type: 'string',
        value: 'N',
        help: 'a request must be complete by then (default 30)',
      },
      'allow-unsigned-reports': {
        type: 'boolean',
        help:
          'start without a report key (KHRUN_REPORT_KEY_FILE or KHRUN_REPORT_KEY), taking only unsigned v2-style ' +
          'reports, each identified by a pod LIST (else KHRUN_ALLOW_UNSIGNED_REPORTS=true)',
      },
      'no-status': { type: 'boolean', help: 'serve reports only: no status routes, no metrics' },
      'no-reports': {
        type: 'boolean',
        help: 'serve status and metrics only: no report key needed, every report refused',
      },
      'no-error-label': {
        type: 'boolean',
        help: "drop the metrics' error label (else KHRUN_SUPPRESS_ERROR_LABEL)",
      },
      'error-label-max-bytes': {
        type: 'string',
        value: 'N',
        help: "cut the metrics' error label to N bytes (else KHRUN_ERROR_LABEL_MAX_BYTES; 0: no cut)",
      },
      ...OLD_NAMESPACES,
    },
    env: [
      'KUBECONFIG',
      'KHRUN_NAMESPACES',
      'KHRUN_SERVE_HOST',
      'KHRUN_SERVE_PORT',
      'KHRUN_SUPPRESS_ERROR_LABEL',
      'KHRUN_ERROR_LABEL_MAX_BYTES',
      'KHRUN_TRIGGER_TOKEN_FILE',
      'KHRUN_TRIGGER_TOKEN',
      'KHRUN_TRIGGER_MAX_RUNS',
      'KHRUN_TRIGGER_MAX_WAIT_SECONDS',
      'KH_EXTERNAL_REPORTING_URL',
      'KHRUN_REPORT_KEY_FILE',
      'KHRUN_REPORT_KEY',
      'KHRUN_REPORT_UNSIGNED',
      'KHRUN_ALLOW_UNSIGNED_REPORTS',
      'POD_IP',
      'KHRUN_LEASE_SECONDS',
      'KHRUN_NOTIFY_CONFIG_FILE',
      'KHRUN_NOTIFY_CONFIG',
      'POD_NAME',
      'POWERTOOLS_LOG_LEVEL',
    ],
  },
  async run({ values }, ctx) {
    const { logLevel, ...options } = serveOptions({ flags: values, env: ctx.env });
    return serveCommand({
      ...options,
      log: logPort(loggerFor(ctx, logLevel)),
      signal: signalOnTermination(),
      write: ctx.write,
    });
  },
};
