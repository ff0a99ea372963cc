import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import type { V1PodTemplate, V1PodTemplateSpec } from '@kubernetes/client-node';
import { syncCommand } from '../../lib/commands/sync.ts';
import { offlineSync, SyncFileError } from '../../lib/commands/sync-files.ts';
import { placeholderRunnerTemplate, type RunnerTemplateRef } from '../../lib/config/runner-template.ts';
import { syncOptions } from '../../lib/config/sync-options.ts';
import { EXIT } from '../../lib/core/exit-codes.ts';
import { logPort } from '../../lib/core/log.ts';
import { ApiErrorKind, classifyApiError } from '../../lib/kube/errors.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import { syncKube } from '../../lib/sync/sync-kube.ts';
import { readRunnerTemplate } from '../../lib/tick/tick-kube.ts';
import { type CliCommand, loggerFor } from './context.ts';
import { runnerFlags, scopeFlags } from './schedule.ts';

/**
 * The runner template of a dry run: the PodTemplate when it can be read; when it does not exist (nothing
 * installed yet) or cannot be read (forbidden), a placeholder and a note that says so. A dry run shows what
 * the CronJobs would be; only the runner's image and settings are then unknown.
 */
export async function dryRunTemplate(
  read: () => Promise<V1PodTemplate>,
  ref: RunnerTemplateRef,
): Promise<{ template: V1PodTemplateSpec; note?: string }> {
  let why: string;
  try {
    const found = await read();
    if (found.template) return { template: found.template };
    why = 'has no template';
  } catch (error) {
    const kind = classifyApiError(error);
    if (kind === ApiErrorKind.NotFound) why = 'does not exist';
    else if (kind === ApiErrorKind.Forbidden) why = 'cannot be read (forbidden)';
    else throw error;
  }
  const template = placeholderRunnerTemplate(ref);
  const image = template.spec?.containers[0]?.image;
  return {
    template,
    note:
      `the runner PodTemplate ${ref.namespace}/${ref.name} ${why}: rendered with a placeholder runner ` +
      `(image ${JSON.stringify(image)}); apply infra/deploy before a real sync`,
  };
}

/** `khrun sync`: one CronJob per khcheck. */
export const sync: CliCommand = {
  spec: {
    name: 'sync',
    summary: 'one CronJob per khcheck (schedule from runInterval); removes those of deleted khchecks',
    description:
      'Keeps one CronJob khrun-<check> per khcheck in its namespace, owned by the khcheck, made from the ' +
      'khrun-runner PodTemplate (server-side apply, field manager khrun-sync), and deletes the CronJobs of ' +
      'khchecks that are gone. --dry-run changes nothing and prints what it would do; without the ' +
      'PodTemplate it renders a placeholder runner and says so. --dry-run -f FILE renders the CronJobs of ' +
      'the khchecks and HealthChecks in the files offline (no kubeconfig, no API server): the runner ' +
      'PodTemplate is taken from the files when they hold it, deletions are not shown.',
    examples: [
      {
        what: "what sync would apply and delete, from the cluster's khchecks; nothing written",
        line: 'khrun sync --dry-run -o yaml',
      },
      {
        what: 'offline: the CronJobs for khcheck files, no cluster needed',
        line: 'khrun sync --dry-run -f checks.yaml -n checks -o yaml',
      },
      {
        what: 'offline, with the runner PodTemplate of the install',
        line: 'kubectl kustomize infra/deploy | khrun sync --dry-run -f - -f checks.yaml',
      },
      {
        what: 'apply the CronJobs (and delete those of deleted khchecks)',
        line: 'khrun sync -n checks',
      },
    ],
    flags: {
      ...scopeFlags('sync in', {
        values: ['yaml', 'json'],
        help: 'print the CronJobs as yaml (schedule notes as comments) or json (default: a line per CronJob)',
      }),
      'dry-run': { type: 'boolean', help: 'change nothing; print what would be applied and deleted' },
      filename: {
        type: 'string',
        short: 'f',
        value: 'FILE',
        complete: 'file',
        repeatable: true,
        help: "with --dry-run: render the khchecks of these files offline (repeatable; - for stdin), not the cluster's",
      },
      ...runnerFlags('template-namespace'),
    },
    env: ['KUBECONFIG', 'KHRUN_NAMESPACES', 'KHRUN_NAMESPACE', 'POD_NAMESPACE', 'POWERTOOLS_LOG_LEVEL'],
  },
  async run({ values, repeated }, ctx) {
    const options = syncOptions({ flags: values, env: ctx.env, files: repeated?.filename ?? [] });
    const { template: ref, source } = options;
    const log = logPort(loggerFor(ctx, options.logLevel));
    const common = {
      scope: options.scope,
      jobOptions: DEFAULT_RUN_JOB_OPTIONS,
      dryRun: options.dryRun,
      output: options.output,
      log,
      write: ctx.write,
    };
    if (source.kind === 'files') {
      try {
        const offline = await offlineSync({
          files: source.files,
          namespace: source.namespace,
          template: ref,
          readInput: (path) => (path === '-' ? text(process.stdin) : readFile(path, 'utf8')),
        });
        return await syncCommand({ ...common, ...offline });
      } catch (error) {
        if (!(error instanceof SyncFileError)) throw error;
        ctx.warn(`khrun: sync: ${error.message}`);
        return EXIT.usage;
      }
    }
    const client = kubeClient(source.kc);
    const { template, note } = options.dryRun
      ? await dryRunTemplate(
          () => client.core.readNamespacedPodTemplate({ name: ref.name, namespace: ref.namespace }),
          ref,
        )
      : { template: await readRunnerTemplate(client, ref.namespace, ref.name), note: undefined };
    return syncCommand({ ...common, kube: syncKube(client), template, notes: note ? [note] : [] });
  },
};
