import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { lambdaDispatcher } from '../../lib/aws/lambda-invoke.ts';
import { fleetTickCommand } from '../../lib/commands/fleet-tick.ts';
import { tickCommand } from '../../lib/commands/tick.ts';
import { takeOverSetting } from '../../lib/config/takeover-options.ts';
import { tickOptions } from '../../lib/config/tick-options.ts';
import { randomIds } from '../../lib/core/ids.ts';
import { logPort } from '../../lib/core/log.ts';
import { type KubeClient, kubeClient, withSignal } from '../../lib/kube/kube-client.ts';
import { fetchSender } from '../../lib/notify/http.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import { jobDispatcher, readRunnerTemplate, tickKube } from '../../lib/tick/tick-kube.ts';
import { type CliCommand, loggerFor, signalOnTermination } from './context.ts';
import { commonFlags, FLEET_FLAGS, type FlagTable, OLD_NAMESPACES } from './flags.ts';

export const scopeFlags = (what: string, output: { values: readonly string[]; help: string }) =>
  commonFlags({
    namespaces: {
      kind: 'list',
      help: 'only the khchecks of these namespaces (else KHRUN_NAMESPACES, else every namespace)',
      allHelp: `${what} every namespace, whatever KHRUN_NAMESPACES says`,
    },
    output,
  });

export const runnerFlags = (oldName: string): FlagTable => ({
  'runner-namespace': {
    type: 'string',
    value: 'NS',
    help: 'where khrun is installed: its runner PodTemplate (else KHRUN_NAMESPACE, else POD_NAMESPACE, else khrun)',
    complete: 'namespace',
  },
  'pod-template': { type: 'string', value: 'NAME', help: 'the runner PodTemplate (default khrun-runner)' },
  ...OLD_NAMESPACES,
  [oldName]: { type: 'string', value: 'NS', help: 'old spelling', deprecated: { use: 'runner-namespace' } },
});

/** `khrun tick`: the due checks dispatched, in batches. */
export const tick: CliCommand = {
  spec: {
    name: 'tick',
    summary: 'dispatch the due checks: Jobs from the runner PodTemplate, or Lambda invocations',
    description:
      'Reads every khcheck and khstate in scope and dispatches the due checks (no live run, and the last ' +
      'start plus runInterval has come), up to --batch-size khchecks per invocation (khjobs and ' +
      'HealthChecks one each): a Job made from the khrun-runner PodTemplate of the runner namespace ' +
      '(--mode job, the default), or an asynchronous invocation of --function (--mode lambda). It never ' +
      'runs a check itself. With --context A,B or --all-contexts it ticks each cluster side by side, each ' +
      'within its own --cluster-timeout (default 45s), its due checks dispatched to runners in that cluster; ' +
      'lines are prefixed [cluster] and -o json|yaml is keyed by cluster. Exit 1 when a dispatch or a cluster failed.',
    examples: [
      {
        what: 'dispatch the due checks of two namespaces as runner Jobs',
        line: 'khrun tick -n checks,team-a',
      },
      {
        what: 'the decisions as JSON, for a script',
        line: 'khrun tick -o json',
      },
      {
        what: 'one tick over two clusters, each dispatching to runners in its own cluster',
        line: 'khrun tick --context prod-eu,prod-us --runner-namespace khrun',
      },
      {
        what: 'dispatch as Lambda invocations instead of Jobs',
        line: 'khrun tick --mode lambda --function khrun-runCheck',
      },
    ],
    flags: {
      ...scopeFlags('dispatch in', {
        values: ['json', 'yaml'],
        help: 'print the decisions as json or yaml (default: a line per check)',
      }),
      mode: { type: 'string', value: 'job|lambda', help: 'how to dispatch (else KHRUN_DISPATCH, else job)' },
      function: {
        type: 'string',
        value: 'NAME',
        help: 'lambda mode: the runCheck function (else RUN_CHECK_FUNCTION)',
      },
      'first-run-jitter': {
        type: 'string',
        value: 'DURATION',
        help: 'spread the first runs of new checks over up to this long (default 1m; 0s: none)',
      },
      'dispatch-ttl': {
        type: 'string',
        value: 'DURATION',
        help: 'a dispatch not started by then may be sent again (default 5m)',
      },
      'batch-size': {
        type: 'string',
        value: 'N',
        help: 'the most khchecks one runner Job or Lambda invocation runs (else KHRUN_BATCH_SIZE, else 50; 1: one per check)',
      },
      concurrency: {
        type: 'string',
        value: 'N',
        help: 'the most claims and dispatches in flight (else KHRUN_TICK_CONCURRENCY, else 32)',
      },
      ...runnerFlags('job-namespace'),
      ...FLEET_FLAGS,
    },
    env: [
      'KUBECONFIG',
      'KHRUN_CLUSTER_TIMEOUT',
      'KHRUN_CLUSTER_CONCURRENCY',
      'KHRUN_NAMESPACES',
      'KHRUN_DISPATCH',
      'RUN_CHECK_FUNCTION',
      'AWS_REGION',
      'KHRUN_FIRST_RUN_JITTER',
      'KHRUN_DISPATCH_TTL',
      'KHRUN_BATCH_SIZE',
      'KHRUN_TICK_CONCURRENCY',
      'KHRUN_NOTIFY_CONFIG_FILE',
      'KHRUN_NOTIFY_CONFIG',
      'KHRUN_TAKE_OVER',
      'KHRUN_NAMESPACE',
      'POD_NAMESPACE',
      'POD_NAME',
      'POWERTOOLS_LOG_LEVEL',
    ],
  },
  async run({ values }, ctx) {
    const options = tickOptions({ flags: values, env: ctx.env });
    const { dispatch } = options;
    const log = logPort(loggerFor(ctx, options.logLevel));
    const takeOver = takeOverSetting({ flags: {}, env: ctx.env });
    // cluster: over several, a runCheck event names the cluster its checks live in (the function's KHRUN_CLUSTERS).
    const dispatcherOn = async (client: KubeClient, cluster?: string) =>
      dispatch.kind === 'lambda'
        ? lambdaDispatcher({
            functionName: dispatch.functionName,
            region: dispatch.region,
            endpoint: dispatch.endpoint,
            credentials: defaultProvider(),
            cluster,
          })
        : jobDispatcher({
            client,
            namespace: dispatch.template.namespace,
            template: await readRunnerTemplate(client, dispatch.template.namespace, dispatch.template.name),
            jobOptions: DEFAULT_RUN_JOB_OPTIONS,
          });
    const config = {
      scope: options.scope,
      identity: options.identity,
      timings: options.timings,
      takeOver,
      batchSize: options.batchSize,
      concurrency: options.concurrency,
    };
    if (options.fleet) {
      // One client object per cluster, its requests cut at that cluster's deadline; runners in that cluster.
      const byName = new Map(options.fleet.clusters.map((c) => [c.name, c.kc]));
      return fleetTickCommand({
        clusters: options.fleet.clusters.map((c) => c.name),
        concurrency: options.fleet.settings.concurrency,
        deadlineMs: options.fleet.settings.deadlineMs,
        signal: signalOnTermination(),
        async open(cluster, signal) {
          const client = withSignal(kubeClient(byName.get(cluster)!, { log }), signal);
          const dispatcher = await dispatcherOn(client, cluster);
          // Each cluster's tick sweeps that cluster's notification outboxes, as one cluster's does.
          const notify = options.notify ? { notify: { config: options.notify, http: fetchSender } } : {};
          return { kube: tickKube(client), dispatcher, clock: client.clock, log, ids: randomIds, ...notify };
        },
        config,
        output: options.output,
        write: ctx.write,
      });
    }
    // The tick's one client object: unbounded (the tick bounds its claims and dispatches itself).
    const client = kubeClient(options.kc, { log });
    return tickCommand({
      kube: tickKube(client),
      dispatcher: await dispatcherOn(client),
      ...config,
      ids: randomIds,
      clock: client.clock,
      output: options.output,
      log,
      write: ctx.write,
      notify: options.notify,
    });
  },
};
