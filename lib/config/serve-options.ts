import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { UnsignedPolicy } from '../report/authorize-report.ts';
import type { ReportKey } from '../report/report-token.ts';
import type { MetricsOptions } from '../status/error-label.ts';
import { identity, logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { metricsOptions } from './metrics-options.ts';
import { khrunNamespaces } from './namespaces.ts';
import {
  ALLOW_UNSIGNED_ENV,
  ALLOW_UNSIGNED_FLAG,
  reportKey,
  requireKeyOrOptIn,
  unsignedPolicy,
} from './report-key.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { type TriggerOptions, triggerOptions } from './trigger-options.ts';
import { bool, integer, port, secondsMs } from './values.ts';

export interface ServeFlags extends KubeconfigFlags {
  host?: string;
  port?: string;
  namespace?: string;
  'all-namespaces'?: boolean;
  /** The old spelling of --namespace. */
  namespaces?: string;
  'max-body-bytes'?: string;
  'request-timeout-seconds'?: string;
  'drain-seconds'?: string;
  'no-status'?: boolean;
  /** Status and metrics only: no report key needed, every report refused. */
  'no-reports'?: boolean;
  'no-error-label'?: boolean;
  'error-label-max-bytes'?: string;
  /** Start without a report key: unsigned reports only (else KHRUN_ALLOW_UNSIGNED_REPORTS=true). */
  'allow-unsigned-reports'?: boolean;
}

export interface ServeOptions {
  kc: KubeConfig;
  scope: NamespaceScope;
  host: string;
  port: number;
  identity: string;
  /**
   * KHRUN_REPORT_KEY(_FILE): checks the signed reporting URLs runners (and the trigger) hand out. Required:
   * undefined only when unsigned reports were chosen (--allow-unsigned-reports, KHRUN_ALLOW_UNSIGNED_REPORTS)
   * or no reports are taken (--no-reports).
   */
  reportKey: ReportKey | undefined;
  /** KHRUN_REPORT_UNSIGNED: refuse (default with a key), header, or header-and-ip (default without). */
  unsigned: UnsignedPolicy;
  /** undefined: the report server's own limits. */
  maxBodyBytes: number | undefined;
  requestTimeoutMs: number | undefined;
  drainMs: number;
  status: boolean;
  metrics: MetricsOptions;
  /** `POST /api/run`: on only with a token configured (never open); undefined: off, the path is a 404. */
  trigger: TriggerOptions | undefined;
  logLevel: LogLevel;
}

/** The run trigger of `khrun serve` (lib/trigger). */
/** Triggered runs are a runner's runs: the same lease and kept pods as `khrun run` (runnerSettings). */
/**
 * --no-reports: a status server that takes no report, so needs no report key (the kustomization's default,
 * where nothing can make the key Secret). Every report is refused without an API request (no key, unsigned
 * refused: authorize-report.ts). Refused with a key or unsigned reports configured, which would say the
 * opposite, with the status routes off (nothing left to serve), and with the run trigger (its checker pods
 * report to this server).
 */
function noReports(input: ConfigInput<ServeFlags>, key: ReportKey | undefined): void {
  const problem = (what: string) => `cannot be combined with ${what}: this server would take no reports`;
  if (key) {
    throw new ConfigError({
      setting: '--no-reports',
      problem: problem('a report key (KHRUN_REPORT_KEY_FILE or KHRUN_REPORT_KEY)'),
      remedy: 'drop --no-reports to take signed reports, or unset the key',
    });
  }
  if (flagSet(input, ALLOW_UNSIGNED_FLAG) || bool(setting(input, { env: [ALLOW_UNSIGNED_ENV] }), false)) {
    throw new ConfigError({
      setting: '--no-reports',
      problem: problem(`--${ALLOW_UNSIGNED_FLAG} (${ALLOW_UNSIGNED_ENV})`),
      remedy: 'choose one of them',
    });
  }
  if (flagSet(input, 'no-status')) {
    throw new ConfigError({
      setting: '--no-reports',
      problem: 'and --no-status leave nothing to serve',
      remedy: 'drop one of them',
    });
  }
  const token = ['KHRUN_TRIGGER_TOKEN_FILE', 'KHRUN_TRIGGER_TOKEN'].find(
    (name) => setting(input, { env: [name] }).text !== undefined,
  );
  if (token) {
    throw new ConfigError({
      setting: '--no-reports',
      problem: `cannot be combined with the run trigger (${token} is set): checker pods of triggered runs report to this server`,
      remedy: `drop --no-reports (and give the server the report key), or unset ${token}`,
    });
  }
}

/** `khrun serve`: the report endpoint (and status routes) as a long-running server. */
export function serveOptions(input: ConfigInput<ServeFlags>): ServeOptions {
  const timeout = setting(input, { flags: ['request-timeout-seconds'] });
  const host = setting(input, { flags: ['host'], env: ['KHRUN_SERVE_HOST'] }).text ?? '0.0.0.0';
  const key = reportKey(input);
  const reports = !flagSet(input, 'no-reports');
  if (!reports) noReports(input, key);
  const options: Omit<ServeOptions, 'kc'> = {
    scope: khrunNamespaces(input),
    host,
    // 0 picks a free port (the tests read the URL from the first line).
    port: port(setting(input, { flags: ['port'], env: ['KHRUN_SERVE_PORT'] }), {
      defaultPort: 8080,
      allowZero: true,
    }),
    identity: identity(input, 'khrun-serve'),
    reportKey: key,
    unsigned: reports ? unsignedPolicy(input, { key, natted: false }) : 'refuse',
    maxBodyBytes: integer(setting(input, { flags: ['max-body-bytes'] }), { min: 1, what: 'bytes' }),
    requestTimeoutMs: timeout.text === undefined ? undefined : secondsMs(timeout, { defaultSeconds: 30 }),
    drainMs: secondsMs(setting(input, { flags: ['drain-seconds'] }), { defaultSeconds: 10, allowZero: true }),
    status: !flagSet(input, 'no-status'),
    metrics: metricsOptions(input),
    trigger: triggerOptions(input, host, key),
    logLevel: logLevel(input),
  };
  const kc = cliKube(input).kc;
  if (reports) requireKeyOrOptIn(input, key, { hasFlag: true, parameter: false });
  return { ...options, kc };
}
