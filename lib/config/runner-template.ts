import { objectName, RUNNER_NAMESPACE_ENV, runnerNamespace } from './namespaces.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';

export const DEFAULT_POD_TEMPLATE = 'khrun-runner';

/** The PodTemplate every dispatched runner Job (tick) and per-check CronJob (sync) is made from. */
export interface RunnerTemplateRef {
  /** Where khrun is installed: see namespaces.ts runnerNamespace. */
  namespace: string;
  name: string;
}

/**
 * --runner-namespace (or the command's older alias: tick's --job-namespace, sync's --template-namespace) /
 * KHRUN_NAMESPACE / POD_NAMESPACE / `kuberhealthy`; --pod-template, default `khrun-runner`.
 */
export function runnerTemplate(input: ConfigInput<Flags>, aliasFlag: string): RunnerTemplateRef {
  const name = setting(input, { flags: ['pod-template'] });
  return {
    namespace: runnerNamespace(
      setting(input, { flags: ['runner-namespace', aliasFlag], env: RUNNER_NAMESPACE_ENV }),
    ),
    name: name.text === undefined ? DEFAULT_POD_TEMPLATE : objectName(name.text, name.source, 'PodTemplate'),
  };
}
