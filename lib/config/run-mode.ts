import type { KubeConfig } from '@kubernetes/client-node';
import type { RunTarget } from '../core/run-target.ts';
import { ConfigError } from './config-error.ts';
import type { CliKube } from './kubeconfig.ts';
import { reportHostFromKubeconfig } from './kubeconfig-report-host.ts';
import { checkNamespace, oneNamespaceSetting } from './namespaces.ts';
import { reportSettings } from './report-address.ts';
import { objectToRun, type RunFlags } from './run-options.ts';
import { type RunnerTemplateRef, runnerTemplate } from './runner-template.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { bool, oneOf } from './values.ts';

/**
 * Where `khrun run` runs one object: `local`, in this process, hosting the report endpoint checker pods
 * reach (today's path, and the only one inside a runner pod); `in-cluster`, as a runner Job made from the
 * runner PodTemplate in khrun's namespace, followed to its outcome (lib/rerun), so a laptop whose address
 * pods cannot reach can rerun a check.
 */
export type RunMode = 'local' | 'in-cluster';

export interface RunModeInput {
  /** --in-cluster */
  inCluster: boolean;
  /** --local */
  local: boolean;
  /**
   * Whether a run here has an address checker pods report to: KH_EXTERNAL_REPORTING_URL, --report-host,
   * KHRUN_REPORT_HOST, POD_IP, or the kubeconfig's khrun.dev/report-host (the local cluster's).
   */
  reportAddress: boolean;
}

/**
 * The flag when one is given; else local when checker pods can reach this process (or report elsewhere),
 * else in the cluster: with no report address a run here could only time out. Pure.
 */
export function decideRunMode(input: RunModeInput): RunMode {
  if (input.inCluster && input.local)
    throw new ConfigError({
      setting: '--in-cluster',
      problem: 'contradicts --local',
      remedy: 'give --local to run here (with a report host) or --in-cluster for a runner Job, not both',
    });
  if (input.inCluster) return 'in-cluster';
  if (input.local) return 'local';
  return input.reportAddress ? 'local' : 'in-cluster';
}

/** The settings that only a run in this process uses: refused with --in-cluster rather than ignored. */
const LOCAL_ONLY = [
  { flag: 'report-host' },
  { flag: 'report-port' },
  { flag: 'take-over', env: 'KHRUN_TAKE_OVER' },
] as const;

/** The run mode of one object's `khrun run`, from its flags, environment and kubeconfig. */
export function runMode(input: ConfigInput<RunFlags>, kube: Pick<CliKube, 'kc' | 'files'>): RunMode {
  const report = reportSettings(input);
  const cluster = kube.kc.getCurrentCluster()?.name;
  const mode = decideRunMode({
    inCluster: flagSet(input, 'in-cluster'),
    local: flagSet(input, 'local'),
    reportAddress: Boolean(
      report.externalUrl ??
        report.host ??
        (cluster ? reportHostFromKubeconfig(kube.files, cluster) : undefined),
    ),
  });
  if (mode === 'in-cluster') refuseLocalOnly(input);
  return mode;
}

function refuseLocalOnly(input: ConfigInput<RunFlags>): void {
  for (const { flag, ...rest } of LOCAL_ONLY) {
    const env = 'env' in rest ? rest.env : undefined;
    const given =
      input.flags[flag] !== undefined && input.flags[flag] !== false
        ? `--${flag}`
        : env && bool(setting(input, { env: [env] }), false)
          ? env
          : undefined;
    if (!given) continue;
    throw new ConfigError({
      setting: given,
      problem:
        'applies to a run in this process (--local); this run goes to a runner Job in the cluster, which ' +
        'takes its settings from the runner PodTemplate (no report host could be found, or --in-cluster)',
      remedy:
        flag === 'take-over'
          ? 'take the check over first (khrun takeover), or run here with --local and --report-host'
          : 'leave it out, or run here with --local and a --report-host checker pods can reach',
    });
  }
}

/** `khrun run` of one object as a runner Job in the cluster (lib/rerun). */
export interface InClusterRunOptions {
  kc: KubeConfig;
  target: RunTarget;
  /** The runner PodTemplate the Job is made from: --runner-namespace / KHRUN_NAMESPACE, --pod-template. */
  template: RunnerTemplateRef;
  output: 'text' | 'json' | 'yaml';
}

/** The options of an in-cluster run: the same target rules as a run here (run-options.ts). */
export function inClusterRunOptions(input: ConfigInput<RunFlags>, kube: CliKube): InClusterRunOptions {
  const object = objectToRun(input);
  const namespaceSetting = oneNamespaceSetting(input, 'a run is one check in one namespace');
  return {
    kc: kube.kc,
    target: { ...object, namespace: checkNamespace(namespaceSetting, kube.contextNamespace) },
    template: runnerTemplate(input, 'runner-namespace'),
    output: oneOf(setting(input, { flags: ['output'] }), ['text', 'json', 'yaml'], 'text'),
  };
}
