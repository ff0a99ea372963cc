import type { KubeConfig } from '@kubernetes/client-node';
import type { LogLevel } from '../core/log.ts';
import type { KindName, RunTarget } from '../core/run-target.ts';
import type { ReportHosting } from '../report/report-hosting.ts';
import type { ReportKey } from '../report/report-token.ts';
import { ITERATION_DEFAULTS } from '../run/iteration.ts';
import type { RunSettings } from '../session/session.ts';
import { type ClusterAccess, clusterAccess } from './cluster-access.ts';
import { identity, logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { healthCheckName } from './healthcheck-name.ts';
import { khjobName } from './job-name.ts';
import { type CliKube, cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { CHECK_NAMESPACE_ENV, checkNamespace, objectName, oneNamespaceSetting } from './namespaces.ts';
import { type NotifyParameterText, notifyConfig } from './notify-options.ts';
import { externalReportingUrl, type ReportFlags, reportHosting, reportSettings } from './report-address.ts';
import { reportKey } from './report-key.ts';
import type { ParameterKeyText } from './report-key-parameter.ts';
import { eventFieldOf, type RunEventFlags, runEventFlags } from './run-check-event.ts';
import { type ConfigInput, type Env, type Setting, setting } from './setting.ts';
import { integer, oneOf, required, secondsMs } from './values.ts';

/** What one iteration needs from configuration, the same for `khrun run` and the runCheck Lambda. */
type IterationSettings = ReturnType<typeof runnerSettings>;

/** The object to run, but its namespace: a khjob or HealthCheck when one is named, else CHECK_NAME's khcheck. */
export function objectToRun(
  input: ConfigInput<{ check?: string; [flag: string]: string | boolean | undefined }>,
): {
  kind: KindName;
  name: string;
} {
  const hcName = healthCheckName(input);
  const jobName = khjobName(input);
  if (jobName) return { kind: 'khjob', name: jobName };
  if (hcName) return { kind: 'healthcheck', name: hcName };
  const name = setting(input, { flags: ['check'], env: ['CHECK_NAME'] });
  return {
    kind: 'khcheck',
    name: objectName(required(name, 'the name of the khcheck to run'), name.source, 'khcheck'),
  };
}

/**
 * What every run of an invocation shares, one check's or a batch's: the lease, how many finished checker
 * pods each check keeps, and the log level.
 */
export function runnerSettings(
  input: ConfigInput,
  notifyParameter?: NotifyParameterText,
): RunSettings & { logLevel: LogLevel } {
  const notify = notifyConfig(input, notifyParameter);
  return {
    ...(notify ? { notify } : {}),
    leaseMs: secondsMs(setting(input, { env: ['KHRUN_LEASE_SECONDS'] }), {
      defaultSeconds: ITERATION_DEFAULTS.leaseMs / 1000,
    }),
    keepFinishedPods: keptPods(setting(input, { env: ['KHRUN_KEEP_FINISHED_PODS'] })),
    logLevel: logLevel(input),
  };
}

/** 0 to 10: a finished checker pod is kept for its logs; 1,000 checks keeping 3 each are 3,000 pods in etcd. */
function keptPods(s: Setting): number | undefined {
  const n = integer(s, { min: 0, what: 'pods' });
  if (n !== undefined && n > 10)
    throw new ConfigError({
      setting: s.source,
      value: s.text ?? '',
      problem: 'keeps more than 10 finished checker pods per check',
      remedy: 'give 0 to 10 (default 3); older pods are deleted at the next run of their check',
    });
  return n;
}

export interface RunFlags extends KubeconfigFlags, ReportFlags {
  check?: string;
  /** A khjob to run once instead of a khcheck (else KHJOB_NAME). */
  job?: string;
  /** A Kuberhealthy v3 HealthCheck to run instead of a khcheck (else HEALTHCHECK_NAME). */
  healthcheck?: string;
  namespace?: string;
  /** Run as a runner Job in the cluster (run-mode.ts); --local: in this process. */
  'in-cluster'?: boolean;
  local?: boolean;
  /** Refused: a run is one check in one namespace. */
  'all-namespaces'?: boolean;
  output?: string;
}

export interface RunOptions extends IterationSettings {
  kc: KubeConfig;
  /** The object to run (--check, --job, --healthcheck, else CHECK_NAME, KHJOB_NAME, HEALTHCHECK_NAME). */
  target: RunTarget;
  runner: string;
  report: ReportHosting;
  output: 'text' | 'json' | 'yaml';
  /** Fault-suite failpoint (unset in production): SIGKILL the process when the iteration reaches this phase. */
  killAtPhase: string | undefined;
}

/**
 * `khrun run`: flags and environment (CHECK_NAME, CHECK_NAMESPACE, KHRUN_LEASE_SECONDS, ...). -n takes one
 * namespace; -A and a comma list are refused.
 */
export function runOptions(input: ConfigInput<RunFlags>, loaded?: CliKube): RunOptions {
  const { object, settings, output, namespaceSetting, report } = settingsBeforeKube(input);
  const kube = loaded ?? cliKube(input);
  return {
    ...settings,
    kc: kube.kc,
    target: { ...object, namespace: checkNamespace(namespaceSetting, kube.contextNamespace) },
    runner: identity(input, 'khrun'),
    report: reportHosting(report, { files: kube.files, clusterName: kube.kc.getCurrentCluster()?.name }),
    output,
    killAtPhase: setting(input, { env: ['KHRUN_FAILPOINT_KILL_AT'] }).text,
  };
}

/**
 * Every setting of one object's `khrun run` that needs no kubeconfig, validated: checked before any
 * kubeconfig is read (by runOptions, and by the choice of where the run happens), so a bad value fails
 * first, whatever the kubeconfig.
 */
export function settingsBeforeKube(input: ConfigInput<RunFlags>) {
  return {
    object: objectToRun(input),
    settings: runnerSettings(input),
    output: oneOf(setting(input, { flags: ['output'] }), ['text', 'json', 'yaml'], 'text'),
    namespaceSetting: oneNamespaceSetting(input, 'a run is one check in one namespace'),
    report: reportSettings(input),
  };
}

export interface LambdaRunCheckOptions extends IterationSettings {
  cluster: ClusterAccess;
  /** The object to run: the event's kind (else KHJOB_NAME or HEALTHCHECK_NAME, else a khcheck) and names. */
  target: RunTarget;
  /**
   * A Lambda hosts no endpoint: checker pods report to the report function's URL, signed for each run
   * with the report key when one is set (KHRUN_REPORT_KEY_PARAMETER's, else KHRUN_REPORT_KEY(_FILE); the
   * report function must hold the same key).
   */
  report: { kind: 'external'; url: string; key?: ReportKey };
  /** The iteration stops this long before the function's timeout: KHRUN_BUDGET_MARGIN_SECONDS, default 30. */
  budgetMarginMs: number;
}

/**
 * The runCheck Lambda: the event (run-check-event.ts) plays `khrun run`'s --check, --job or --healthcheck
 * (by its kind) and --namespace, with the same variables, defaults and checks (minus the kubeconfig
 * context, which a Lambda has not).
 */
export function lambdaRunCheckOptions(input: {
  event: unknown;
  env: Env;
  keyParameter?: ParameterKeyText;
  notifyParameter?: NotifyParameterText;
}): LambdaRunCheckOptions {
  const config: ConfigInput<RunEventFlags> = {
    flags: runEventFlags(input.event),
    env: input.env,
    flagLabel: eventFieldOf,
  };
  const object = objectToRun(config);
  const settings = runnerSettings(config, input.notifyParameter);
  const namespace = checkNamespace(setting(config, { flags: ['namespace'], env: CHECK_NAMESPACE_ENV }));
  return {
    ...settings,
    target: { ...object, namespace },
    ...lambdaRunnerSettings(config, input.keyParameter),
  };
}

/**
 * What a runCheck invocation needs whatever it runs, one object or a batch (lib/config/batch-options.ts).
 * keyParameter: the text of KHRUN_REPORT_KEY_PARAMETER's parameter, as the handler read it.
 */
export function lambdaRunnerSettings(config: ConfigInput, keyParameter?: ParameterKeyText) {
  const url = externalReportingUrl(config);
  const key = reportKey(config, keyParameter);
  if (!url) {
    throw new ConfigError({
      setting: 'KH_EXTERNAL_REPORTING_URL',
      problem: 'is required: a Lambda cannot host the report endpoint',
      remedy: "set it to the report function's URL followed by externalCheckStatus (serverless.yml does)",
    });
  }
  return {
    report: { kind: 'external', url, ...(key ? { key } : {}) } as LambdaRunCheckOptions['report'],
    budgetMarginMs: secondsMs(setting(config, { env: ['KHRUN_BUDGET_MARGIN_SECONDS'] }), {
      defaultSeconds: 30,
      allowZero: true,
    }),
    cluster: clusterAccess(config),
  };
}
