import type { KubeConfig } from '@kubernetes/client-node';
import type { BatchEntry } from '../batch/batch-entry.ts';
import type { LogLevel } from '../core/log.ts';
import type { ReportHosting } from '../report/report-hosting.ts';
import type { RunSettings } from '../session/session.ts';
import { BATCH_ENV, batchFromEvent, batchFromJson, batchFromNames } from './batch-checks.ts';
import type { ClusterAccess } from './cluster-access.ts';
import { identity } from './common.ts';
import { ConfigError } from './config-error.ts';
import { cliKube } from './kubeconfig.ts';
import { checkNamespace, oneNamespaceSetting } from './namespaces.ts';
import type { NotifyParameterText } from './notify-options.ts';
import { reportHosting, reportSettings } from './report-address.ts';
import type { ParameterKeyText } from './report-key-parameter.ts';
import { batchEventChecks, eventFieldOf } from './run-check-event.ts';
import { type InClusterRunOptions, inClusterRunOptions, runMode } from './run-mode.ts';
import {
  type LambdaRunCheckOptions,
  lambdaRunCheckOptions,
  lambdaRunnerSettings,
  type RunFlags,
  type RunOptions,
  runnerSettings,
  runOptions,
  settingsBeforeKube,
} from './run-options.ts';
import { type ConfigInput, type Env, setting } from './setting.ts';
import { oneOf } from './values.ts';

export interface BatchRunOptions extends RunSettings {
  kc: KubeConfig;
  checks: BatchEntry[];
  runner: string;
  report: ReportHosting;
  output: 'text' | 'json' | 'yaml';
  logLevel: LogLevel;
  /** Fault-suite failpoint (unset in production): SIGKILL the process when any check reaches this phase. */
  killAtPhase: string | undefined;
}

/**
 * `khrun run` runs one object here, one object as a runner Job in the cluster (run-mode.ts), or a batch of
 * khchecks here.
 */
export type RunPlan =
  | { kind: 'one'; options: RunOptions }
  | { kind: 'in-cluster'; options: InClusterRunOptions }
  | { kind: 'batch'; options: BatchRunOptions };

const NAME_VARIABLES = ['CHECK_NAME', 'KHJOB_NAME', 'HEALTHCHECK_NAME'] as const;

/**
 * `khrun run`: a batch when --check is given more than once (all in one namespace: -n, else CHECK_NAMESPACE,
 * else the context's), or when KHRUN_BATCH is set and no --check, --job or --healthcheck flag names one
 * object (a flag wins over its variable). Otherwise one object, exactly as runOptions builds it.
 * `checks`: every --check value in order (the parser keeps only the last in flags.check).
 */
export function runPlan(input: ConfigInput<RunFlags>, checks: readonly string[] = []): RunPlan {
  const flags = input.flags;
  const many = checks.length > 1;
  if (many && (flags.job !== undefined || flags.healthcheck !== undefined))
    throw new ConfigError({
      setting: flags.job !== undefined ? '--job' : '--healthcheck',
      problem: 'goes with one object; --check given more than once runs a batch of khchecks',
      remedy: 'run the khjob or HealthCheck on its own, the khchecks in a batch',
    });
  const batchText = many ? undefined : setting(input, { env: [BATCH_ENV] }).text;
  const named = flags.check !== undefined || flags.job !== undefined || flags.healthcheck !== undefined;
  if (!many && (batchText === undefined || named)) return onePlan(input);
  if (flags['in-cluster'] === true)
    throw new ConfigError({
      setting: '--in-cluster',
      problem: 'runs one object; a batch runs in this process',
      remedy: 'run each check on its own (khrun run --check NAME), or the batch here with a --report-host',
    });
  let fromEnv: BatchEntry[] | undefined;
  if (batchText !== undefined) {
    const both = NAME_VARIABLES.find((v) => input.env[v]);
    if (both)
      throw new ConfigError({
        setting: `${BATCH_ENV} and ${both}`,
        problem: 'both name what to run',
        remedy: `set ${BATCH_ENV} for a batch or ${both} for one object, not both`,
      });
    if (flags.namespace !== undefined || flags['all-namespaces'] !== undefined)
      throw new ConfigError({
        setting: flags.namespace !== undefined ? '--namespace' : '--all-namespaces',
        problem: `does not apply to ${BATCH_ENV}, whose entries name their namespaces`,
        remedy: 'leave it out, or name the checks with --check NAME --check NAME -n NS',
      });
    fromEnv = batchFromJson(batchText);
  }
  const namespaceSetting = many
    ? oneNamespaceSetting(input, 'a batch from --check runs in one namespace')
    : undefined;
  const output = oneOf(setting(input, { flags: ['output'] }), ['text', 'json', 'yaml'], 'text');
  const settings = runnerSettings(input);
  const report = reportSettings(input);
  // Every setting that needs no kubeconfig is checked first: a bad value fails before any file is read.
  const kube = cliKube(input);
  const list = fromEnv ?? batchFromNames(checks, checkNamespace(namespaceSetting!, kube.contextNamespace));
  return {
    kind: 'batch',
    options: {
      ...settings,
      kc: kube.kc,
      checks: list,
      runner: identity(input, 'khrun'),
      report: reportHosting(report, { files: kube.files, clusterName: kube.kc.getCurrentCluster()?.name }),
      output,
      killAtPhase: setting(input, { env: ['KHRUN_FAILPOINT_KILL_AT'] }).text,
    },
  };
}

/** One object: here, or as a runner Job when no report host can be found or --in-cluster says so. */
function onePlan(input: ConfigInput<RunFlags>): RunPlan {
  // The settings that need no kubeconfig fail first, as in runOptions; the mode needs the kubeconfig.
  settingsBeforeKube(input);
  const kube = cliKube(input);
  return runMode(input, kube) === 'in-cluster'
    ? { kind: 'in-cluster', options: inClusterRunOptions(input, kube) }
    : { kind: 'one', options: runOptions(input, kube) };
}

export interface LambdaBatchOptions extends RunSettings {
  checks: BatchEntry[];
  cluster: ClusterAccess;
  report: LambdaRunCheckOptions['report'];
  budgetMarginMs: number;
  logLevel: LogLevel;
}

/** The runCheck Lambda runs one object, or a batch of khchecks. */
export type LambdaRunPlan =
  | { kind: 'one'; options: LambdaRunCheckOptions }
  | { kind: 'batch'; options: LambdaBatchOptions };

/**
 * The runCheck Lambda: an event {"checks": [...]} is a batch (lib/config/batch-checks.ts), with the same
 * variables and checks as one object's run; any other event is one object's (lambdaRunCheckOptions).
 * keyParameter: the text of KHRUN_REPORT_KEY_PARAMETER's parameter, as the handler read it.
 */
export function lambdaRunPlan(input: {
  event: unknown;
  env: Env;
  keyParameter?: ParameterKeyText;
  notifyParameter?: NotifyParameterText;
}): LambdaRunPlan {
  const checks = batchEventChecks(input.event);
  if (checks === undefined) return { kind: 'one', options: lambdaRunCheckOptions(input) };
  const list = batchFromEvent(checks);
  const config: ConfigInput = { flags: {}, env: input.env, flagLabel: eventFieldOf };
  return {
    kind: 'batch',
    options: {
      checks: list,
      ...runnerSettings(config, input.notifyParameter),
      ...lambdaRunnerSettings(config, input.keyParameter),
    },
  };
}
