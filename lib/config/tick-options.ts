import type { KubeConfig } from '@kubernetes/client-node';
import { MAX_BATCH_CHECKS } from '../batch/batch-entry.ts';
import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { NotifyConfig } from '../notify/config.ts';
import { DEFAULT_BATCH_SIZE, DEFAULT_TICK_CONCURRENCY } from '../schedule/dispatch-due.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings } from '../schedule/due.ts';
import { type ClusterAccess, clusterAccess } from './cluster-access.ts';
import { identity, logLevel } from './common.ts';
import { cliKube, type KubeconfigFlags } from './kubeconfig.ts';
import { namespacesScope } from './namespaces.ts';
import { type NotifyParameterText, notifyConfig } from './notify-options.ts';
import { type RunnerTemplateRef, runnerTemplate } from './runner-template.ts';
import { type ConfigInput, type Env, type Flags, NO_FLAGS, setting } from './setting.ts';
import { goDurationMs, httpUrl, oneOf, required, wholeInRange } from './values.ts';

/** The runCheck function the tick invokes asynchronously, once per batch of due checks. */
export interface LambdaTarget {
  kind: 'lambda';
  functionName: string;
  region: string;
  /** Another Lambda API endpoint (the integration tests' fake); undefined: AWS's. */
  endpoint: string | undefined;
}

/** Where the tick sends each due check. */
export type DispatchTarget = { kind: 'job'; template: RunnerTemplateRef } | LambdaTarget;

/** What the tick needs from configuration, the same for `khrun tick` and the tick Lambda. */
interface TickSettings {
  scope: NamespaceScope;
  timings: DueTimings;
  /** The most khchecks per runner invocation (a batch Job, one Lambda event); 1: one per check. */
  batchSize: number;
  /** The most claims and dispatches in flight at once. */
  concurrency: number;
  logLevel: LogLevel;
  /** The notification configuration: the tick delivers what runners left in outboxes (lib/notify/sweep.ts). */
  notify?: NotifyConfig;
}

/**
 * Bounds: a batch is at most what one runner invocation takes (MAX_BATCH_CHECKS, lib/batch); more than 256
 * requests in flight only queue in the API server's flow control.
 */
const MAX_TICK_CONCURRENCY = 256;

function tickSettings(input: ConfigInput<Flags>, notifyParameter?: NotifyParameterText): TickSettings {
  const notify = notifyConfig(input, notifyParameter);
  return {
    ...(notify ? { notify } : {}),
    scope: namespacesScope(input, ['KHRUN_NAMESPACES']),
    timings: {
      ...DEFAULT_DUE_TIMINGS,
      dispatchTtlMs: goDurationMs(setting(input, { flags: ['dispatch-ttl'], env: ['KHRUN_DISPATCH_TTL'] }), {
        defaultMs: DEFAULT_DUE_TIMINGS.dispatchTtlMs,
      }),
      maxFirstRunJitterMs: goDurationMs(
        setting(input, { flags: ['first-run-jitter'], env: ['KHRUN_FIRST_RUN_JITTER'] }),
        { defaultMs: DEFAULT_DUE_TIMINGS.maxFirstRunJitterMs, allowZero: true },
      ),
    },
    batchSize: wholeInRange(setting(input, { flags: ['batch-size'], env: ['KHRUN_BATCH_SIZE'] }), {
      min: 1,
      max: MAX_BATCH_CHECKS,
      defaultValue: DEFAULT_BATCH_SIZE,
      meaning: 'it is the most checks one runner Job or Lambda invocation runs (1: one per check)',
    }),
    concurrency: wholeInRange(setting(input, { flags: ['concurrency'], env: ['KHRUN_TICK_CONCURRENCY'] }), {
      min: 1,
      max: MAX_TICK_CONCURRENCY,
      defaultValue: DEFAULT_TICK_CONCURRENCY,
      meaning: 'it is the most API requests the tick has in flight while it claims and dispatches',
    }),
    logLevel: logLevel(input),
  };
}

/** --function / RUN_CHECK_FUNCTION, AWS_REGION (or AWS_DEFAULT_REGION), KHRUN_LAMBDA_ENDPOINT (tests). */
function lambdaTarget(input: ConfigInput<Flags>): LambdaTarget {
  return {
    kind: 'lambda',
    functionName: required(
      setting(input, { flags: ['function'], env: ['RUN_CHECK_FUNCTION'] }),
      'the runCheck function to invoke',
    ),
    region: required(setting(input, { env: ['AWS_REGION', 'AWS_DEFAULT_REGION'] }), 'the AWS region'),
    endpoint: httpUrl(setting(input, { env: ['KHRUN_LAMBDA_ENDPOINT'] })),
  };
}

export interface TickFlags extends KubeconfigFlags {
  namespace?: string;
  'all-namespaces'?: boolean;
  /** The old spelling of --namespace. */
  namespaces?: string;
  mode?: string;
  function?: string;
  'runner-namespace'?: string;
  'job-namespace'?: string;
  'pod-template'?: string;
  'dispatch-ttl'?: string;
  'first-run-jitter'?: string;
  'batch-size'?: string;
  concurrency?: string;
  output?: string;
}

export interface TickOptions extends TickSettings {
  kc: KubeConfig;
  dispatch: DispatchTarget;
  identity: string;
  output: 'text' | 'json' | 'yaml';
}

/** `khrun tick`: --mode / KHRUN_DISPATCH job (a Job from the khrun-runner PodTemplate) or lambda. */
export function tickOptions(input: ConfigInput<TickFlags>): TickOptions {
  const settings = tickSettings(input);
  const output = oneOf(setting(input, { flags: ['output'] }), ['text', 'json', 'yaml'], 'text');
  const mode = oneOf(setting(input, { flags: ['mode'], env: ['KHRUN_DISPATCH'] }), ['job', 'lambda'], 'job');
  const dispatch: DispatchTarget =
    mode === 'lambda'
      ? lambdaTarget(input)
      : { kind: 'job', template: runnerTemplate(input, 'job-namespace') };
  return {
    ...settings,
    kc: cliKube(input).kc,
    dispatch,
    identity: identity(input, 'khrun-tick'),
    output,
  };
}

export interface LambdaTickOptions extends TickSettings {
  cluster: ClusterAccess;
  dispatch: LambdaTarget;
}

/** The tick Lambda: always dispatches to the runCheck function. */
export function lambdaTickOptions(input: {
  env: Env;
  notifyParameter?: NotifyParameterText;
}): LambdaTickOptions {
  const config: ConfigInput<Flags> = { flags: {}, env: input.env, flagLabel: NO_FLAGS };
  const settings = tickSettings(config, input.notifyParameter);
  return { ...settings, dispatch: lambdaTarget(config), cluster: clusterAccess(config) };
}
