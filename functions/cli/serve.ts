import { serveCommand } from '../../lib/commands/serve.ts';
import { serveFleetCommand } from '../../lib/commands/serve-fleet.ts';
import { serveFleetOptions } from '../../lib/config/serve-fleet-options.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { type CliCommand, loggerFor, signalOnTermination } from './context.ts';
import { commonFlags, FLEET_FLAGS, OLD_NAMESPACES } from './flags.ts';

/** `khrun serve`: the report endpoint and status routes as a long-running server. */
export const serve: CliCommand = {
  spec: {
    name: 'serve',
    summary: 'the report endpoint as a long-running server, with the status routes and metrics',
    description:
      'Serves the report endpoint (/externalCheckStatus) for checker pods, the status JSON and page at /, ' +
      '/status and /json, Prometheus metrics at /metrics, and /healthz and /readyz; with a trigger token ' +
      '(KHRUN_TRIGGER_TOKEN_FILE or KHRUN_TRIGGER_TOKEN), POST /api/run starts a run of a check. On SIGTERM ' +
      '/readyz answers 503, requests and triggered runs in flight get the drain time, then it exits 0. With ' +
      '--context A,B or --all-contexts it serves the status of every cluster (keyed and labelled by cluster, ' +
      'one that cannot be read shown as such) and POST /api/run?cluster=C starts a runner Job in C; it then ' +
      'takes no reports.',
    examples: [
      {
        what: 'the report endpoint, status page and metrics on port 8080',
        line: 'khrun serve --port 8080',
      },
      {
        what: 'one status page and /metrics (a cluster label on each series) over two clusters',
        line: 'khrun serve --context prod-eu,prod-us --port 8080',
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
      'runner-namespace': {
        type: 'string',
        value: 'NS',
        help: 'with several clusters: where khrun is installed in each, for triggered runner Jobs (else KHRUN_NAMESPACE, else POD_NAMESPACE, else khrun)',
        complete: 'namespace',
      },
      'pod-template': {
        type: 'string',
        value: 'NAME',
        help: 'with several clusters: the runner PodTemplate of triggered runner Jobs (default khrun-runner)',
      },
      ...FLEET_FLAGS,
      ...OLD_NAMESPACES,
    },
    env: [
      'KUBECONFIG',
      'KHRUN_CLUSTER_TIMEOUT',
      'KHRUN_CLUSTER_CONCURRENCY',
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
      'KHRUN_NAMESPACE',
      'POD_NAMESPACE',
      'POD_IP',
      'KHRUN_LEASE_SECONDS',
      'KHRUN_NOTIFY_CONFIG_FILE',
      'KHRUN_NOTIFY_CONFIG',
      'POD_NAME',
      'POWERTOOLS_LOG_LEVEL',
    ],
  },
  async run({ values }, ctx) {
    const fleet = serveFleetOptions({ flags: values, env: ctx.env });
    if (fleet) {
      return serveFleetCommand({
        ...fleet,
        log: logPort(loggerFor(ctx, fleet.logLevel)),
        signal: signalOnTermination(),
        write: ctx.write,
      });
    }
    const { logLevel, ...options } = serveOptions({ flags: values, env: ctx.env });
    return serveCommand({
      ...options,
      log: logPort(loggerFor(ctx, logLevel)),
      signal: signalOnTermination(),
      write: ctx.write,
    });
  },
};
