import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { MetricsOptions } from '../status/metrics.ts';
import { type ClusterAccess, clusterAccess } from './cluster-access.ts';
import { identity, logLevel } from './common.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { metricsOptions } from './metrics-options.ts';
import { namespaceScope } from './namespaces.ts';
import { type ConfigInput, type Env, type Flags, flagSet, NO_FLAGS, setting } from './setting.ts';
import { integer, port, secondsMs } from './values.ts';

const scopeOf = (input: ConfigInput<Flags>): NamespaceScope =>
  namespaceScope(setting(input, { flags: ['namespaces'], env: ['KHRUN_NAMESPACES'] }));

export interface ServeFlags extends KubeconfigFlags {
  host?: string;
  port?: string;
  namespaces?: string;
  'max-body-bytes'?: string;
  'request-timeout-seconds'?: string;
  'drain-seconds'?: string;
  'no-status'?: boolean;
  'no-error-label'?: boolean;
  'error-label-max-bytes'?: string;
}

export interface ServeOptions {
  kc: KubeConfig;
  scope: NamespaceScope;
  host: string;
  port: number;
  identity: string;
  /** undefined: the report server's own limits. */
  maxBodyBytes: number | undefined;
  requestTimeoutMs: number | undefined;
  drainMs: number;
  status: boolean;
  metrics: MetricsOptions;
  logLevel: LogLevel;
}

/** `khrun serve`: the report endpoint (and status routes) as a long-running server. */
export function serveOptions(input: ConfigInput<ServeFlags>): ServeOptions {
  const timeout = setting(input, { flags: ['request-timeout-seconds'] });
  const options: Omit<ServeOptions, 'kc'> = {
    scope: scopeOf(input),
    host: setting(input, { flags: ['host'], env: ['KHRUN_SERVE_HOST'] }).text ?? '0.0.0.0',
    // 0 picks a free port (the tests read the URL from the first line).
    port: port(setting(input, { flags: ['port'], env: ['KHRUN_SERVE_PORT'] }), {
      defaultPort: 8080,
      allowZero: true,
    }),
    identity: identity(input, 'khrun-serve'),
    maxBodyBytes: integer(setting(input, { flags: ['max-body-bytes'] }), { min: 1, what: 'bytes' }),
    requestTimeoutMs: timeout.text === undefined ? undefined : secondsMs(timeout, { defaultSeconds: 30 }),
    drainMs: secondsMs(setting(input, { flags: ['drain-seconds'] }), { defaultSeconds: 10, allowZero: true }),
    status: !flagSet(input, 'no-status'),
    metrics: metricsOptions(input),
    logLevel: logLevel(input),
  };
  return { ...options, kc: cliKube(input).kc };
}

export interface LambdaReportOptions {
  cluster: ClusterAccess;
  scope: NamespaceScope;
  /** How long to wait for a reporting pod's IP to show up in a list: KHRUN_IP_LOOKUP_WAIT_SECONDS, default 2. */
  ipLookupWaitMs: number;
  logLevel: LogLevel;
}

/** The report Lambda: the report endpoint behind a function URL. */
export function lambdaReportOptions(input: { env: Env }): LambdaReportOptions {
  const config: ConfigInput<Flags> = { flags: {}, env: input.env, flagLabel: NO_FLAGS };
  return {
    scope: scopeOf(config),
    ipLookupWaitMs: secondsMs(setting(config, { env: ['KHRUN_IP_LOOKUP_WAIT_SECONDS'] }), {
      defaultSeconds: 2,
      allowZero: true,
    }),
    logLevel: logLevel(config),
    cluster: clusterAccess(config),
  };
}
