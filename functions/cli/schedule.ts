import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { lambdaDispatcher } from '../../lib/aws/lambda-invoke.ts';
import { syncCommand } from '../../lib/commands/sync.ts';
import { tickCommand } from '../../lib/commands/tick.ts';
import { logPort } from '../../lib/core/log.ts';
import { DEFAULT_DUE_TIMINGS } from '../../lib/schedule/due.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import { syncKube } from '../../lib/schedule/sync-kube.ts';
import { jobDispatcher, readRunnerTemplate, tickKube } from '../../lib/schedule/tick-kube.ts';
import {
  type CliContext,
  contextNamespace,
  durationFlagMs,
  kubeConfigOrFail,
  loggerFor,
  scopeFrom,
} from './context.ts';

/** `khrun tick`: one dispatch per due check. */
export async function tick(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      namespaces: { type: 'string' },
      kubeconfig: { type: 'string' },
      mode: { type: 'string' },
      function: { type: 'string' },
      'job-namespace': { type: 'string' },
      'pod-template': { type: 'string' },
      'dispatch-ttl': { type: 'string' },
      'first-run-jitter': { type: 'string' },
      output: { type: 'string', short: 'o' },
    },
  });
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json')
    return ctx.fail(`--output must be text or json, not "${output}"`);
  const mode = values.mode ?? ctx.env.KHRUN_DISPATCH ?? 'job';
  if (mode !== 'job' && mode !== 'lambda') return ctx.fail(`--mode must be job or lambda, not "${mode}"`);
  const dispatchTtlMs = durationFlagMs(values['dispatch-ttl'], DEFAULT_DUE_TIMINGS.dispatchTtlMs);
  if (dispatchTtlMs === undefined) return ctx.fail(`--dispatch-ttl must be a Go duration such as 5m`);
  const jitterText = values['first-run-jitter'] ?? ctx.env.KHRUN_FIRST_RUN_JITTER;
  const maxFirstRunJitterMs = /^0+(s|m|h|ms)?$/.test(jitterText ?? '')
    ? 0
    : durationFlagMs(jitterText, DEFAULT_DUE_TIMINGS.maxFirstRunJitterMs);
  if (maxFirstRunJitterMs === undefined)
    return ctx.fail('--first-run-jitter must be a Go duration such as 1m or 0s');
  const kc = kubeConfigOrFail(ctx, { kubeconfig: values.kubeconfig });
  if (typeof kc === 'number') return kc;
  const log = logPort(loggerFor(ctx.env));
  let dispatcher: Parameters<typeof tickCommand>[0]['dispatcher'];
  if (mode === 'lambda') {
    const functionName = values.function ?? ctx.env.RUN_CHECK_FUNCTION;
    const region = ctx.env.AWS_REGION ?? ctx.env.AWS_DEFAULT_REGION;
    if (!functionName || !region)
      return ctx.fail('lambda mode needs --function (or RUN_CHECK_FUNCTION) and AWS_REGION');
    dispatcher = lambdaDispatcher({ functionName, region, credentials: defaultProvider() });
  } else {
    const namespace =
      values['job-namespace'] ?? ctx.env.POD_NAMESPACE ?? contextNamespace(kc) ?? 'kuberhealthy';
    const template = await readRunnerTemplate(kc, namespace, values['pod-template'] ?? 'khrun-runner');
    dispatcher = jobDispatcher({ kc, namespace, template, jobOptions: DEFAULT_RUN_JOB_OPTIONS });
  }
  return tickCommand({
    kube: tickKube(kc),
    dispatcher,
    scope: scopeFrom(values.namespaces, ctx.env),
    identity: ctx.env.POD_NAME || `khrun-tick-${hostname()}`,
    timings: { ...DEFAULT_DUE_TIMINGS, dispatchTtlMs, maxFirstRunJitterMs },
    output,
    log,
    write: ctx.write,
  });
}

/** `khrun sync`: one CronJob per khcheck. */
export async function sync(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      namespaces: { type: 'string' },
      kubeconfig: { type: 'string' },
      'dry-run': { type: 'boolean' },
      output: { type: 'string', short: 'o' },
      'pod-template': { type: 'string' },
      'template-namespace': { type: 'string' },
    },
  });
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json' && output !== 'yaml')
    return ctx.fail(`-o must be text, yaml or json, not "${output}"`);
  const kc = kubeConfigOrFail(ctx, { kubeconfig: values.kubeconfig });
  if (typeof kc === 'number') return kc;
  const templateNamespace =
    values['template-namespace'] ?? ctx.env.POD_NAMESPACE ?? contextNamespace(kc) ?? 'kuberhealthy';
  const template = await readRunnerTemplate(kc, templateNamespace, values['pod-template'] ?? 'khrun-runner');
  return syncCommand({
    kube: syncKube(kc),
    scope: scopeFrom(values.namespaces, ctx.env),
    template,
    jobOptions: DEFAULT_RUN_JOB_OPTIONS,
    dryRun: values['dry-run'] ?? false,
    output,
    log: logPort(loggerFor(ctx.env)),
    write: ctx.write,
  });
}
