import { describeCommand } from '../../lib/commands/describe.ts';
import { fleetStatusCommand } from '../../lib/commands/fleet-status.ts';
import { statusCommand } from '../../lib/commands/status.ts';
import { watchStatus } from '../../lib/commands/status-watch.ts';
import { describeOptions, statusOptions } from '../../lib/config/status-options.ts';
import { kubeClient, withSignal } from '../../lib/kube/kube-client.ts';
import { type CliCommand, signalOnTermination } from './context.ts';
import { commonFlags, FLEET_FLAGS } from './flags.ts';

/** `khrun status`: the checks and their last results; with -w, their changes as they happen. */
export const status: CliCommand = {
  spec: {
    name: 'status',
    summary: 'the checks and their last results, like kubectl get (-w: follow changes)',
    description:
      'Prints every khcheck and its last result: CHECK NAMESPACE OK LAST RUN DURATION FAILURES ERROR (a silenced check marked by its name), colored ' +
      'on a terminal and plain when piped. -o wide adds the outcome, node, a run in progress, uptime and alerts; -o json ' +
      "and -o yaml print Kuberhealthy v2's status document. With -w it then follows the khstates and prints " +
      'a line per check whose result changed (-o json: one JSON object per change) until interrupted. ' +
      'With --context A,B or --all-contexts it reads each cluster side by side (each within --cluster-timeout, ' +
      'default 15s): a CLUSTER column, -o json|yaml keyed by cluster, and a cluster that cannot be read shown ' +
      'as unreachable with the reason (exit 1).',
    examples: [
      {
        what: 'every check in every namespace, with its last result',
        line: 'khrun status',
      },
      {
        what: 'one namespace, more columns',
        line: 'khrun status -n checks -o wide',
      },
      {
        what: "Kuberhealthy v2's status document, for a script",
        line: 'khrun status -o json',
      },
      {
        what: 'several clusters in one table, a CLUSTER column first (one that cannot be read says why)',
        line: 'khrun status --context prod-eu,prod-us',
      },
      {
        what: 'the table, then each change as it happens',
        line: 'khrun status -n checks -w',
      },
    ],
    flags: {
      ...commonFlags({
        namespaces: {
          kind: 'list',
          help: 'only these namespaces (default: every namespace)',
          allHelp: 'every namespace (the default)',
        },
        output: { values: ['json', 'yaml', 'wide'], help: 'json or yaml: v2 status; wide: more columns' },
      }),
      watch: {
        type: 'boolean',
        short: 'w',
        help: 'after the table, print each change as it happens (Ctrl-C ends)',
      },
      ...FLEET_FLAGS,
    },
    env: ['KUBECONFIG', 'KHRUN_CLUSTER_TIMEOUT', 'KHRUN_CLUSTER_CONCURRENCY', 'NO_COLOR', 'POD_NAME'],
  },
  async run({ values }, ctx) {
    const { watch, ...options } = statusOptions({
      flags: values,
      env: ctx.env,
      terminal: Boolean(process.stdout.isTTY),
    });
    if (options.fleet) {
      const byName = new Map(options.fleet.clusters.map((c) => [c.name, c.kc]));
      return fleetStatusCommand({
        ...options,
        clusters: options.fleet.clusters.map((c) => c.name),
        // A client object per cluster, its requests cut at that cluster's deadline.
        clientFor: (cluster, signal) => withSignal(kubeClient(byName.get(cluster)!), signal),
        concurrency: options.fleet.settings.concurrency,
        deadlineMs: options.fleet.settings.deadlineMs,
        nowMs: () => Date.now(),
        write: ctx.write,
      });
    }
    const common = { ...options, client: kubeClient(options.kc), nowMs: () => Date.now(), write: ctx.write };
    // Only a watch waits for Ctrl-C; a plain status ends by itself.
    return watch
      ? watchStatus({ ...common, signal: signalOnTermination(), warn: ctx.warn })
      : statusCommand(common);
  },
};

/** `khrun describe CHECK`: one check in detail. */
export const describe: CliCommand = {
  spec: {
    name: 'describe',
    args: 'CHECK',
    completeArgs: 'khchecks',
    summary: 'a check, its active or last run, errors, history and events',
    description:
      'Shows one check as kubectl describe would: the khcheck, its status, the active or last run as a ' +
      'timeline (claim, pod created, scheduled, started, report accepted, recorded, exited), the errors, ' +
      "the checker's log tail (khrun logs prints it whole), the history and the Events. Exit 2 when " +
      'neither a khcheck nor a khstate has that name.',
    examples: [
      {
        what: 'one check: its last run as a timeline, errors, history, events',
        line: 'khrun describe ping -n checks',
      },
    ],
    flags: commonFlags({
      namespaces: {
        kind: 'one',
        help: "the check's namespace, one (else CHECK_NAMESPACE, else the kubeconfig context's, else default)",
        refuseAll: 'refused: describe shows one check in one namespace',
      },
    }),
    env: ['CHECK_NAMESPACE', 'KUBECONFIG', 'NO_COLOR'],
  },
  async run({ values, positionals }, ctx) {
    const options = describeOptions({
      flags: values,
      env: ctx.env,
      positionals,
      terminal: Boolean(process.stdout.isTTY),
    });
    return describeCommand({
      ...options,
      client: kubeClient(options.kc),
      nowMs: () => Date.now(),
      write: ctx.write,
      warn: ctx.warn,
    });
  },
};
