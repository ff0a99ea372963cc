import type { V1PodTemplateSpec } from '@kubernetes/client-node';
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
 * KHRUN_NAMESPACE / POD_NAMESPACE / `khrun`; --pod-template, default `khrun-runner`.
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

/**
 * A stand-in for the runner PodTemplate when it cannot be read, for `khrun sync --dry-run` only: the shape
 * infra/deploy's khrun-runner has (container `runner`, `khrun run --output json`, ServiceAccount
 * khrun-runner), with an image that says what it stands for, so nobody mistakes the output for a real one.
 */
export function placeholderRunnerTemplate(ref: RunnerTemplateRef): V1PodTemplateSpec {
  return {
    metadata: { labels: { 'app.kubernetes.io/name': 'khrun', 'app.kubernetes.io/component': 'runner' } },
    spec: {
      serviceAccountName: 'khrun-runner',
      restartPolicy: 'Never',
      containers: [
        {
          name: 'runner',
          image: `<image of PodTemplate ${ref.namespace}/${ref.name}>`,
          args: ['run', '--output', 'json'],
        },
      ],
    },
  };
}
