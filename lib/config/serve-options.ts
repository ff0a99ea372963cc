import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { UnsignedPolicy } from '../report/authorize-report.ts';
import type { ReportKey } from '../report/report-token.ts';
import type { RunSettings } from '../session/session.ts';
import type { MetricsOptions } from '../status/error-label.ts';
import { type ClusterAccess, clusterAccess } from './cluster-access.ts';
import { identity, logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { metricsOptions } from './metrics-options.ts';
import { namespacesScope } from './namespaces.ts';
import {
  ALLOW_UNSIGNED_ENV,
  ALLOW_UNSIGNED_FLAG,
  nattedUnsignedPolicy,
  reportKey,
  requireKeyOrOptIn,
  unsignedPolicy,
} from './report-key.ts';
import type { ParameterKeyText } from './report-key-parameter.ts';
import { runnerSettings } from './run-options.ts';
import { type ConfigInput, type Env, type Flags, flagSet, NO_FLAGS, setting } from './setting.ts';
import { bool, httpUrl, integer, port, required, secondsMs } from './values.ts';

/** -n A,B (or the old --namespaces), -A, else KHRUN_NAMESPACES, else all; a Lambda has only the variable. */
const scopeOf = (input: ConfigInput<Flags>): NamespaceScope => namespacesScope(input, ['KHRUN_NAMESPACES']);

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
export interface TriggerOptions extends RunSettings {
  /** The bearer token callers must send: KHRUN_TRIGGER_TOKEN_FILE (a mounted Secret) or KHRUN_TRIGGER_TOKEN. */
  token: string;
  /** Triggered runs in progress at once: KHRUN_TRIGGER_MAX_RUNS, default 4; one more is answered 429. */
  maxRuns: number;
  /** The longest a `wait=true` request is held: KHRUN_TRIGGER_MAX_WAIT_SECONDS, default 300. */
  maxWaitMs: number;
  /**
   * Where checker pods of triggered runs report: this server. KH_EXTERNAL_REPORTING_URL when set (the
   * Service's URL); else --host when it is a specific address; else POD_IP (in a pod), on the server's port.
   */
  reportTo: { url: string } | { host: string };
  /** Signs the triggered runs' reporting URLs: the server's KHRUN_REPORT_KEY, when configured. */
  reportKey: ReportKey | undefined;
}

/** A trigger token shorter than this is refused: it would be guessable. */
export const MIN_TRIGGER_TOKEN_CHARS = 16;
const TOKEN_REMEDY = `use a random one of at least ${MIN_TRIGGER_TOKEN_CHARS} characters, e.g. from \`openssl rand -hex 32\``;
const UNSPECIFIED_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

/** The configured trigger token, read and checked; undefined when none is configured (the trigger is off). */
function triggerToken(input: ConfigInput<Flags>): string | undefined {
  const file = setting(input, { env: ['KHRUN_TRIGGER_TOKEN_FILE'] });
  const inline = setting(input, { env: ['KHRUN_TRIGGER_TOKEN'] });
  if (file.text !== undefined && inline.text !== undefined) {
    throw new ConfigError({
      setting: 'KHRUN_TRIGGER_TOKEN_FILE',
      value: file.text,
      problem: 'and KHRUN_TRIGGER_TOKEN are both set',
      remedy: 'set one of them (the file, for a token from a mounted Secret)',
    });
  }
  let token: string;
  let source: string;
  if (file.text !== undefined) {
    source = `the file ${file.text} (KHRUN_TRIGGER_TOKEN_FILE)`;
    try {
      token = readFileSync(file.text, 'utf8').trim();
    } catch (error) {
      throw new ConfigError({
        setting: 'KHRUN_TRIGGER_TOKEN_FILE',
        value: file.text,
        problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        remedy:
          'give the path of a file that holds the token (a mounted Secret key), or unset it to turn the trigger off',
        cause: error,
      });
    }
  } else if (inline.text !== undefined) {
    source = 'KHRUN_TRIGGER_TOKEN';
    token = inline.text.trim();
  } else {
    return undefined;
  }
  // The value itself is never put in a message: it is a credential.
  if (token.length < MIN_TRIGGER_TOKEN_CHARS || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError({
      setting: source,
      problem:
        token.length < MIN_TRIGGER_TOKEN_CHARS
          ? `holds a token of ${token.length} characters, too short to be a credential`
          : 'holds a token with spaces or characters outside printable ASCII (it cannot travel in an Authorization header)',
      remedy: TOKEN_REMEDY,
    });
  }
  return token;
}

/** The trigger's options when a token is configured; every other trigger setting is checked either way. */
function triggerOptions(
  input: ConfigInput<Flags>,
  host: string,
  key: ReportKey | undefined,
): TriggerOptions | undefined {
  const maxRuns = integer(setting(input, { env: ['KHRUN_TRIGGER_MAX_RUNS'] }), { min: 1, what: 'runs' }) ?? 4;
  const maxWaitMs = secondsMs(setting(input, { env: ['KHRUN_TRIGGER_MAX_WAIT_SECONDS'] }), {
    defaultSeconds: 300,
  });
  // A triggered run is a runner's run: the same settings as `khrun run` (run-options.ts), but its log level.
  const { logLevel: _serversOwn, ...run } = runnerSettings(input);
  const url = httpUrl(setting(input, { env: ['KH_EXTERNAL_REPORTING_URL'] }));
  const podIp = setting(input, { env: ['POD_IP'] }).text;
  const token = triggerToken(input);
  if (token === undefined) return undefined;
  let reportTo: TriggerOptions['reportTo'];
  if (url) reportTo = { url };
  else if (!UNSPECIFIED_HOSTS.has(host)) reportTo = { host };
  else if (podIp) reportTo = { host: podIp };
  else {
    throw new ConfigError({
      setting: 'KH_EXTERNAL_REPORTING_URL',
      problem: `is needed by the run trigger: checker pods of triggered runs report to this server, and --host ${host} is no address they can reach`,
      remedy:
        "set it to this server's URL as pods reach it (e.g. http://khrun-server.khrun.svc/externalCheckStatus), " +
        'or set POD_IP (in a pod), or --host to an address pods can reach',
    });
  }
  return { token, maxRuns, maxWaitMs, reportTo, reportKey: key, ...run };
}

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
    scope: scopeOf(input),
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

export interface LambdaReportOptions {
  cluster: ClusterAccess;
  scope: NamespaceScope;
  /**
   * The key the runCheck function signs reporting URLs with: from the SSM parameter KHRUN_REPORT_KEY_PARAMETER
   * names (read by the handler), else KHRUN_REPORT_KEY(_FILE). Required: undefined only with
   * KHRUN_ALLOW_UNSIGNED_REPORTS=true.
   */
  reportKey: ReportKey | undefined;
  /** KHRUN_REPORT_UNSIGNED: refuse (default with a key) or header (default without); never by source IP. */
  unsigned: Exclude<UnsignedPolicy, 'header-and-ip'>;
  logLevel: LogLevel;
}

/**
 * The report Lambda: the report endpoint behind a function URL. Pods reach it through NAT, so it never
 * identifies them by source address. keyParameter: the text of KHRUN_REPORT_KEY_PARAMETER's parameter, as
 * the handler read it (lib/aws/report-key-parameter.ts); checked here like any other key.
 */
export function lambdaReportOptions(input: {
  env: Env;
  keyParameter?: ParameterKeyText;
}): LambdaReportOptions {
  const config: ConfigInput<Flags> = { flags: {}, env: input.env, flagLabel: NO_FLAGS };
  const key = reportKey(config, input.keyParameter);
  const options: LambdaReportOptions = {
    scope: scopeOf(config),
    reportKey: key,
    unsigned: nattedUnsignedPolicy(config, key),
    logLevel: logLevel(config),
    cluster: clusterAccess(config),
  };
  requireKeyOrOptIn(config, key, { hasFlag: false, parameter: true });
  return options;
}

/** The runCheck function the trigger Lambda invokes asynchronously. */
export interface TriggerDispatch {
  functionName: string;
  region: string;
  /** Another Lambda API endpoint (the integration tests' stand-in); undefined: AWS's. */
  endpoint: string | undefined;
}

export interface LambdaTriggerOptions {
  /** The namespaces whose checks may be triggered: KHRUN_NAMESPACES (empty: all). */
  scope: NamespaceScope;
  dispatch: TriggerDispatch;
  logLevel: LogLevel;
}

/**
 * The trigger Lambda: `POST /api/run` behind a function URL with AuthType AWS_IAM, handing each accepted
 * request to the runCheck function (RUN_CHECK_FUNCTION, AWS_REGION, KHRUN_LAMBDA_ENDPOINT as for the tick).
 */
export function lambdaTriggerOptions(input: { env: Env }): LambdaTriggerOptions {
  const config: ConfigInput<Flags> = { flags: {}, env: input.env, flagLabel: NO_FLAGS };
  return {
    scope: scopeOf(config),
    dispatch: {
      functionName: required(
        setting(config, { env: ['RUN_CHECK_FUNCTION'] }),
        'the runCheck function to invoke',
      ),
      region: required(setting(config, { env: ['AWS_REGION', 'AWS_DEFAULT_REGION'] }), 'the AWS region'),
      endpoint: httpUrl(setting(config, { env: ['KHRUN_LAMBDA_ENDPOINT'] })),
    },
    logLevel: logLevel(config),
  };
}
