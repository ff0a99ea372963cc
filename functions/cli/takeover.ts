import { confirmationOf, handbackCommand, takeoverCommand } from '../../lib/commands/takeover.ts';
import { handbackOptions, takeoverOptions } from '../../lib/config/takeover-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { healthCheckTakeoverStates } from '../../lib/healthcheck/takeover-states.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { takeoverKube } from '../../lib/takeover/kube-takeover.ts';
import { terminalQuestion } from './confirm.ts';
import { type CliCommand, loggerFor, signalOnTermination } from './context.ts';
import { commonFlags, type FlagTable } from './flags.ts';

const KUBE_FLAGS = commonFlags({
  namespaces: {
    kind: 'one',
    help: "the Kuberhealthy Deployment's namespace (else any)",
    refuseAll: 'refused: the command acts on one Kuberhealthy',
  },
  output: { values: ['json', 'yaml'], help: 'print the result as json or yaml (default: lines of text)' },
});

const CONFIRM_FLAGS = (what: string): FlagTable => ({
  'dry-run': {
    type: 'boolean',
    help: `change nothing: print what ${what} would change (reads only)`,
  },
  yes: {
    type: 'boolean',
    short: 'y',
    help: 'go ahead without asking (without it: a question on a terminal; elsewhere exit 2)',
  },
});

const CONFIRMATION =
  'It changes production objects: on a terminal it shows what it will change and asks first; elsewhere it ' +
  'needs --yes (without it: exit 2, nothing changed). --dry-run prints the same plan and changes nothing. ';

const PERMISSIONS =
  'Runs with your credentials, not the runner’s: it lists Deployments in every namespace, patches the ' +
  'Kuberhealthy Deployment, watches its pods, lists khchecks and khstates (v3: HealthChecks), updates ' +
  'khstates (v3: HealthChecks and their status) and deletes checker pods.';

/** `khrun takeover`: Kuberhealthy v2 to zero, its khstates khrun's. */
export const takeover: CliCommand = {
  spec: {
    name: 'takeover',
    synopsis: '[--from NAMESPACE/NAME | -n NAMESPACE]',
    summary: 'take the checks of a running Kuberhealthy over: scale it to zero, adopt its khstates',
    description:
      'Scales the Kuberhealthy Deployment to zero, waits for its pods to be gone, then marks every ' +
      'khstate of its khchecks (v3: every HealthCheck) as khrun’s (results and history kept) and removes ' +
      'the checker pods of a run it had in flight (v3: that run is closed, its currentUUID cleared). ' +
      'Rerun it to resume one interrupted. Exit 0: taken over; 2: no single Kuberhealthy to take over, or not ' +
      'confirmed; 1: an API failure. ' +
      CONFIRMATION +
      PERMISSIONS,
    examples: [
      {
        what: 'what would change: the Deployment scaled to 0, the checks khrun would run; nothing written',
        line: 'khrun takeover --dry-run',
      },
      {
        what: 'take over from a named Kuberhealthy, without the question',
        line: 'khrun takeover --from kuberhealthy/kuberhealthy --yes',
      },
      {
        what: 'the plan as JSON, for a review or a script',
        line: 'khrun takeover -n kuberhealthy --dry-run -o json',
      },
    ],
    flags: {
      ...CONFIRM_FLAGS('takeover'),
      from: {
        type: 'string',
        value: 'NAMESPACE/NAME',
        help: 'the Kuberhealthy Deployment (default: the only one running)',
      },
      ...KUBE_FLAGS,
    },
    env: ['KUBECONFIG', 'KHRUN_TAKEOVER_TIMEOUT_SECONDS', 'POWERTOOLS_LOG_LEVEL'],
  },
  async run({ values }, ctx) {
    const options = takeoverOptions({ flags: values, env: ctx.env });
    const log = logPort(loggerFor(ctx, options.logLevel));
    const client = kubeClient(options.kc, { log });
    return takeoverCommand({
      kube: { ...takeoverKube(client), healthChecks: healthCheckTakeoverStates(client) },
      clock: client.clock,
      log,
      signal: signalOnTermination(),
      output: options.output,
      write: ctx.write,
      warn: ctx.warn,
      confirmation: confirmationOf({ ...options, ask: terminalQuestion() }),
      ...(options.from ? { from: options.from } : {}),
      ...(options.namespace ? { namespace: options.namespace } : {}),
      podsGoneTimeoutMs: options.podsGoneTimeoutMs,
    });
  },
};

/** `khrun handback`: the way back. */
export const handback: CliCommand = {
  spec: {
    name: 'handback',
    synopsis: '[--to NAMESPACE/NAME | -n NAMESPACE]',
    summary: 'give the checks back to the Kuberhealthy khrun took them from, and scale it back up',
    description:
      'Marks the khstates khrun took over as Kuberhealthy’s again (khrun run and the tick refuse them from ' +
      'then on), waits for khrun’s runs of them still live to finish (at most until their deadlines), then ' +
      'scales Kuberhealthy back to the replicas it had. Exit 0: handed back; 2: khrun took over no ' +
      'Kuberhealthy (or several: name one), or not confirmed; 1: an API failure. ' +
      CONFIRMATION +
      PERMISSIONS,
    examples: [
      {
        what: 'what would change: the checks given back, the replicas restored; nothing written',
        line: 'khrun handback --dry-run',
      },
      {
        what: 'give the checks back and scale Kuberhealthy to 2 replicas, without the question',
        line: 'khrun handback --to kuberhealthy/kuberhealthy --replicas 2 --yes',
      },
    ],
    flags: {
      ...CONFIRM_FLAGS('handback'),
      to: {
        type: 'string',
        value: 'NAMESPACE/NAME',
        help: 'the Kuberhealthy Deployment (default: the one khrun took over)',
      },
      replicas: {
        type: 'string',
        value: 'N',
        help: 'replicas to restore (default: the count takeover recorded on the Deployment)',
      },
      ...KUBE_FLAGS,
    },
    env: ['KUBECONFIG', 'POWERTOOLS_LOG_LEVEL'],
  },
  async run({ values }, ctx) {
    const options = handbackOptions({ flags: values, env: ctx.env });
    const log = logPort(loggerFor(ctx, options.logLevel));
    const client = kubeClient(options.kc, { log });
    return handbackCommand({
      kube: { ...takeoverKube(client), healthChecks: healthCheckTakeoverStates(client) },
      clock: client.clock,
      log,
      signal: signalOnTermination(),
      output: options.output,
      write: ctx.write,
      warn: ctx.warn,
      confirmation: confirmationOf({ ...options, ask: terminalQuestion() }),
      ...(options.to ? { to: options.to } : {}),
      ...(options.namespace ? { namespace: options.namespace } : {}),
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
    });
  },
};
