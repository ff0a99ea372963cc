import { runCommand } from '../../lib/commands/run.ts';
import { runBatchCommand } from '../../lib/commands/run-batch.ts';
import { runInClusterCommand } from '../../lib/commands/run-in-cluster.ts';
import { runPlan } from '../../lib/config/batch-options.ts';
import { takeOverSetting } from '../../lib/config/takeover-options.ts';
import { logPort } from '../../lib/core/log.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { type CliCommand, loggerFor, signalOnTermination } from './context.ts';
import { commonFlags } from './flags.ts';

/** `khrun run`: one iteration of a khcheck, or of each khcheck of a batch. */
export const run: CliCommand = {
  spec: {
    name: 'run',
    synopsis: '--check NAME | --job NAME | --healthcheck NAME',
    summary: 'run one iteration of a khcheck and record its outcome in the khstate',
    description:
      'Runs one iteration of a khcheck end to end: claims the run in the khstate, creates the checker pod, ' +
      'waits for its report, records the outcome. Exit 0: the outcome is recorded (a failed check is data) ' +
      'or another run of the check is live; 1: the runner could not finish or record; 2: usage or ' +
      'configuration, or refused because a Kuberhealthy runs the check (see khrun takeover). On a terminal ' +
      'the phases are shown on stderr as they happen. A batch: --check given more than once (one namespace), ' +
      'or KHRUN_BATCH=\'[{"namespace":"NS","name":"CHECK"},...]\' (at most 200 khchecks): each check a full ' +
      'iteration of its own in one process with one report endpoint, one line (or JSON object) per check; ' +
      'exit 0 when every check would exit 0 alone, else 1 if any could not finish, else 2. Where it runs: ' +
      'here, hosting the endpoint checker pods report to, when they can reach this machine (a report host ' +
      'is set or recorded by `khrun local up`) or report elsewhere (KH_EXTERNAL_REPORTING_URL); otherwise, ' +
      "as from a laptop, in the cluster: a runner Job made from khrun's runner PodTemplate, as the tick makes " +
      'them, followed to its outcome with progress on stderr, the same result printed and the same exit ' +
      'codes (Ctrl-C stops following; the Job goes on). --local and --in-cluster choose; docs/rerun.md.',
    examples: [
      {
        what: 'run one khcheck: claim, checker pod, report, outcome recorded',
        line: 'khrun run --check ping -n checks',
      },
      {
        what: 'the same, the outcome as one JSON document on stdout (logs on stderr)',
        line: 'khrun run --check ping -n checks -o json',
      },
      {
        what: 'a batch: two khchecks in one process, one JSON line each',
        line: 'khrun run --check ping --check dns -n checks -o json',
      },
      {
        what: 'a Kuberhealthy v3 HealthCheck; a v2 khjob',
        line: 'khrun run --healthcheck web -n checks',
      },
      {
        what: 'from a laptop: the run in the cluster, as a runner Job followed to its outcome',
        line: 'khrun run --check ping -n checks --in-cluster',
      },
    ],
    flags: {
      check: {
        type: 'string',
        value: 'NAME',
        help: 'the khcheck to run (else CHECK_NAME); more than once for a batch',
        complete: 'khchecks',
        repeatable: true,
      },
      job: {
        type: 'string',
        value: 'NAME',
        help: 'a khjob to run once instead: nothing to do if it already ran (else KHJOB_NAME)',
        complete: 'khjobs',
      },
      healthcheck: {
        type: 'string',
        value: 'NAME',
        help: 'a Kuberhealthy v3 HealthCheck to run instead, its result in its status (else HEALTHCHECK_NAME)',
        complete: 'healthchecks',
      },
      ...commonFlags({
        namespaces: {
          kind: 'one',
          help: "the check's namespace, one (else CHECK_NAMESPACE, else the kubeconfig context's, else default)",
          refuseAll: 'refused: a run is one check in one namespace',
        },
        output: {
          values: ['json', 'yaml'],
          help: 'print the outcome as json or yaml (default: a line of text)',
        },
      }),
      'in-cluster': {
        type: 'boolean',
        help: 'run it as a runner Job in the cluster and follow it (the default when no report host is found)',
      },
      local: {
        type: 'boolean',
        help: 'run it in this process, hosting the report endpoint (the default when a report host is found)',
      },
      'runner-namespace': {
        type: 'string',
        value: 'NS',
        help: 'in the cluster: where khrun is installed, its runner PodTemplate (else KHRUN_NAMESPACE, else kuberhealthy)',
      },
      'pod-template': {
        type: 'string',
        value: 'NAME',
        help: 'in the cluster: the runner PodTemplate (default khrun-runner)',
      },
      'report-host': {
        type: 'string',
        value: 'HOST',
        help:
          'where checker pods reach this runner (else KHRUN_REPORT_HOST, else POD_IP, else the host ' +
          '`khrun local up` records in its kubeconfig)',
      },
      'take-over': {
        type: 'boolean',
        help: 'run it even if a Kuberhealthy runs it (else KHRUN_TAKE_OVER); prefer `khrun takeover`',
      },
      'report-port': {
        type: 'string',
        value: 'PORT',
        help: 'the report endpoint port (else KHRUN_REPORT_PORT, else 0: a free one)',
      },
    },
    env: [
      'CHECK_NAME',
      'KHRUN_BATCH',
      'KHJOB_NAME',
      'HEALTHCHECK_NAME',
      'CHECK_NAMESPACE',
      'KUBECONFIG',
      'KH_EXTERNAL_REPORTING_URL',
      'KHRUN_REPORT_KEY_FILE',
      'KHRUN_REPORT_KEY',
      'KHRUN_REPORT_HOST',
      'KHRUN_REPORT_PORT',
      'POD_IP',
      'POD_NAME',
      'KHRUN_LEASE_SECONDS',
      'KHRUN_KEEP_FINISHED_PODS',
      'KHRUN_NOTIFY_CONFIG_FILE',
      'KHRUN_NOTIFY_CONFIG',
      'KHRUN_TAKE_OVER',
      'KHRUN_NAMESPACE',
      'POWERTOOLS_LOG_LEVEL',
    ],
  },
  async run({ values, repeated }, ctx) {
    const plan = runPlan({ flags: values, env: ctx.env }, repeated?.check);
    if (plan.kind === 'batch') {
      const { logLevel, killAtPhase, ...options } = plan.options;
      return runBatchCommand({
        ...options,
        takeOver: takeOverSetting({ flags: values, env: ctx.env }),
        log: logPort(loggerFor(ctx, logLevel)),
        signal: signalOnTermination(),
        write: ctx.write,
        warn: ctx.warn,
        progress: process.stderr.isTTY ? ctx.warn : undefined,
        onPhase: killAtPhase
          ? (_check, phase) => {
              if (phase === killAtPhase) process.kill(process.pid, 'SIGKILL');
            }
          : undefined,
      });
    }
    if (plan.kind === 'in-cluster') {
      const { kc, ...options } = plan.options;
      return runInClusterCommand({
        ...options,
        client: kubeClient(kc),
        signal: signalOnTermination(),
        write: ctx.write,
        warn: ctx.warn,
      });
    }
    const { logLevel, killAtPhase, ...options } = plan.options;
    const log = loggerFor(ctx, logLevel);
    log.appendPersistentKeys({ check: options.target.name, namespace: options.target.namespace });
    return runCommand({
      ...options,
      takeOver: takeOverSetting({ flags: values, env: ctx.env }),
      log: logPort(log),
      signal: signalOnTermination(),
      write: ctx.write,
      warn: ctx.warn,
      progress: process.stderr.isTTY ? ctx.warn : undefined,
      // The fault suite's failpoint: SIGKILL at an exact phase instead of after a guessed delay.
      onPhase: killAtPhase
        ? (phase) => {
            if (phase === killAtPhase) process.kill(process.pid, 'SIGKILL');
          }
        : undefined,
    });
  },
};
