import { parseArgs } from 'node:util';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { lambdaDispatcher } from '../../lib/aws/lambda-invoke.ts';
import { syncCommand } from '../../lib/commands/sync.ts';
import { tickCommand } from '../../lib/commands/tick.ts';
import { syncOptions } from '../../lib/config/sync-options.ts';
import { tickOptions } from '../../lib/config/tick-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import { syncKube } from '../../lib/schedule/sync-kube.ts';
import { jobDispatcher, readRunnerTemplate, tickKube } from '../../lib/schedule/tick-kube.ts';
import { type CliContext, loggerFor } from './context.ts';

/** `khrun tick`: one dispatch per due check. */
export async function tick(rest: string[], ctx: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      namespaces: { type: 'string' },
      kubeconfig: { type: 'string' },
      mode: { type: 'string' },
      function: { type: 'string' },
      'runner-namespace': { type: 'string' },
      'job-namespace': { type: 'string' },
      'pod-template': { type: 'string' },
      'dispatch-ttl': { type: 'string' },
      'first-run-jitter': { type: 'string' },
      output: { type: 'string', short: 'o' },
    },
  });
  const options = tickOptions({ flags: values, env: ctx.env });
  const { kc, dispatch } = options;
  const dispatcher =
    dispatch.kind === 'lambda'
      ? lambdaDispatcher({
          functionName: dispatch.functionName,
          region: dispatch.region,
          endpoint: dispatch.endpoint,
          credentials: defaultProvider(),
        })
      : jobDispatcher({
          kc,
          namespace: dispatch.template.namespace,
          template: await readRunnerTemplate(kc, dispatch.template.namespace, dispatch.template.name),
          jobOptions: DEFAULT_RUN_JOB_OPTIONS,
        });
  return tickCommand({
    kube: tickKube(kc),
    dispatcher,
    scope: options.scope,
    identity: options.identity,
    timings: options.timings,
    output: options.output,
    log: logPort(loggerFor(options.logLevel)),
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
      'runner-namespace': { type: 'string' },
      'template-namespace': { type: 'string' },
    },
  });
  const options = syncOptions({ flags: values, env: ctx.env });
  return syncCommand({
    kube: syncKube(options.kc),
    scope: options.scope,
    template: await readRunnerTemplate(options.kc, options.template.namespace, options.template.name),
    jobOptions: DEFAULT_RUN_JOB_OPTIONS,
    dryRun: options.dryRun,
    output: options.output,
    log: logPort(loggerFor(options.logLevel)),
    write: ctx.write,
  });
}
