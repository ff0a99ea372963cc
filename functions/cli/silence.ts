import { silenceCommand } from '../../lib/commands/silence.ts';
import { silenceOptions } from '../../lib/config/silence-options.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import type { CliCommand } from './context.ts';
import { commonFlags, type FlagTable } from './flags.ts';

const targetFlags: FlagTable = {
  ...commonFlags({
    namespaces: {
      kind: 'list',
      help: "the check's namespace (else CHECK_NAMESPACE, else the context's); with -l, NS[,NS]",
      allHelp: 'with -l: every namespace',
    },
    output: { values: ['json', 'yaml'], help: 'the results as a document' },
  }),
  selector: {
    type: 'string',
    short: 'l',
    value: 'SELECTOR',
    help: 'every check whose labels match, as kubectl -l (instead of CHECK)',
  },
  job: { type: 'boolean', help: 'khjobs instead of khchecks' },
  healthcheck: { type: 'boolean', help: 'Kuberhealthy v3 HealthChecks only' },
};

/** Both commands' body: the options parsed, the annotation written (or removed) as the person running it. */
const runAs =
  (action: 'silence' | 'unsilence'): CliCommand['run'] =>
  async ({ values, positionals }, ctx) => {
    const options = silenceOptions({ flags: values, env: ctx.env, positionals, action });
    return silenceCommand({
      ...options,
      client: kubeClient(options.kc),
      nowMs: () => Date.now(),
      write: ctx.write,
      warn: ctx.warn,
    });
  };

/** `khrun silence CHECK|-l SELECTOR --for DURATION --reason TEXT`. */
export const silence: CliCommand = {
  spec: {
    name: 'silence',
    args: 'CHECK',
    completeArgs: 'khchecks',
    synopsis: '--for DURATION --reason TEXT',
    summary: "hold a check's notifications for a while (it still runs and records)",
    description:
      'Writes the annotation notify.khrun.dev/silence on the check (a khcheck by default, else a HealthCheck ' +
      'of that name; every match of -l): until when, why, and who you are as the API server knows you. The ' +
      'check keeps running and recording; a transition meanwhile is sent when the silence ends (or never: ' +
      'notify.khrun.dev/after-silence=drop), and the silence ends by itself. It needs patch on the checks ' +
      '(ClusterRole khrun-silence); khrun itself cannot write it. Exit 2: no such check; 1: a write failed.',
    examples: [
      {
        what: 'two hours of quiet for a database migration',
        line: 'khrun silence db -n payments --for 2h --reason "db migration"',
      },
      {
        what: "every check of a team's namespaces for the night",
        line: 'khrun silence -l team=payments -n payments,billing --for 10h --reason "planned outage CHG-123"',
      },
    ],
    flags: {
      ...targetFlags,
      for: { type: 'string', value: 'DURATION', help: 'how long (a Go duration, 1m to 2160h: 2h, 30m)' },
      reason: { type: 'string', value: 'TEXT', help: 'why (shown by status, describe and the page)' },
    },
    env: ['CHECK_NAMESPACE', 'KUBECONFIG'],
  },
  run: runAs('silence'),
};

/** `khrun unsilence CHECK|-l SELECTOR`. */
export const unsilence: CliCommand = {
  spec: {
    name: 'unsilence',
    args: 'CHECK',
    completeArgs: 'khchecks',
    summary: "end a check's silence now",
    description:
      'Removes the annotation notify.khrun.dev/silence from the check (every match of -l): what the silence ' +
      "held goes out at the check's next run or tick. A check that was not silenced is left as it is. It " +
      'needs patch on the checks (ClusterRole khrun-silence). Exit 2: no such check; 1: a write failed.',
    examples: [
      { what: 'the migration is done early', line: 'khrun unsilence db -n payments' },
      { what: "every check of a team's namespace", line: 'khrun unsilence -l team=payments -n payments' },
    ],
    flags: targetFlags,
    env: ['CHECK_NAMESPACE', 'KUBECONFIG'],
  },
  run: runAs('unsilence'),
};
