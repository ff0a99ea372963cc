import { readFileSync } from 'node:fs';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { ReportKey } from '../report/report-token.ts';
import type { RunSettings } from '../session/session.ts';
import { logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { fleetNames } from './lambda-fleet.ts';
import { khrunNamespaces } from './namespaces.ts';
import { runnerSettings } from './run-options.ts';
import { type ConfigInput, type Env, type Flags, NO_FLAGS, setting } from './setting.ts';
import { httpUrl, integer, required, secondsMs } from './values.ts';

// The run trigger's options: `khrun serve`'s POST /api/run (a token, its bounds, where triggered runs'
// pods report) and the trigger Lambda's.

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
export function triggerToken(input: ConfigInput<Flags>): string | undefined {
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
export function triggerOptions(
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
  /** KHRUN_CLUSTERS: each request names one of them (`cluster=`), and so does its runCheck event. */
  clusters: string[] | undefined;
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
    scope: khrunNamespaces(config),
    clusters: fleetNames(config),
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
