import { logsCommand } from '../../lib/commands/logs.ts';
import { logsOptions } from '../../lib/config/logs-options.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import type { CliCommand } from './context.ts';
import { commonFlags } from './flags.ts';

/** `khrun logs CHECK`: the checker pod's log of the check's last run. */
export const logs: CliCommand = {
  spec: {
    name: 'logs',
    args: 'CHECK',
    summary: "the checker pod's log of a check's last run (--previous: the run before)",
    description:
      "Prints the log of the checker pod of the check's last run, from the finished pods khrun keeps " +
      '(KHRUN_KEEP_FINISHED_PODS, default 3 per check), as kubectl logs would: the log on stdout, which pod ' +
      'and container on stderr; on a terminal control characters are shown escaped. A khcheck by default ' +
      '(else a HealthCheck of that name); --job for a khjob, --healthcheck for a HealthCheck. Exit 2: no ' +
      'such check, or forbidden (it needs pods list and pods/log get in the namespace); 1: no pod of that ' +
      'run is kept.',
    examples: [
      { what: "the checker's log of the khcheck's last run", line: 'khrun logs ping -n checks' },
      {
        what: 'the run before it, its last 50 lines',
        line: 'khrun logs ping -n checks --previous --tail 50',
      },
      { what: "a HealthCheck's last run", line: 'khrun logs web -n checks --healthcheck' },
    ],
    flags: {
      ...commonFlags({
        namespaces: {
          kind: 'one',
          help: "the check's namespace, one (else CHECK_NAMESPACE, else the kubeconfig context's, else default)",
          refuseAll: 'refused: logs are of one check in one namespace',
        },
      }),
      previous: { type: 'boolean', help: 'the run before the last one (its pod, if it is still kept)' },
      job: { type: 'boolean', help: 'CHECK is a khjob' },
      healthcheck: { type: 'boolean', help: 'CHECK is a Kuberhealthy v3 HealthCheck' },
      container: {
        type: 'string',
        short: 'c',
        value: 'NAME',
        help: "the container (default: the pod's first)",
      },
      tail: { type: 'string', value: 'N', help: 'only the last N lines (default: the whole log)' },
    },
    env: ['CHECK_NAMESPACE', 'KUBECONFIG'],
  },
  async run({ values, positionals }, ctx) {
    const options = logsOptions({ flags: values, env: ctx.env, positionals });
    return logsCommand({
      ...options,
      client: kubeClient(options.kc),
      terminal: Boolean(process.stdout.isTTY),
      nowMs: () => Date.now(),
      write: ctx.write,
      warn: ctx.warn,
    });
  },
};
