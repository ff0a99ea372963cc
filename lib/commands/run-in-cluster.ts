import type { RunnerTemplateRef } from '../config/runner-template.ts';
import { EXIT } from '../core/exit-codes.ts';
import { NotFoundError } from '../core/not-found.ts';
import { type RunTarget, targetLabel } from '../core/run-target.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { ApiServerUnreachableError } from '../kube/unreachable.ts';
import { RerunError } from '../rerun/errors.ts';
import { jobKeepsRunning, rerunInCluster } from '../rerun/rerun.ts';
import { documentExitCode } from '../rerun/runner-document.ts';
import { formatDocument } from './document.ts';
import { runResultText } from './run.ts';

export interface InClusterRunCommandOptions {
  client: KubeClient;
  target: RunTarget;
  template: RunnerTemplateRef;
  output: 'text' | 'json' | 'yaml';
  /** Ctrl-C: following stops, the Job goes on. */
  signal: AbortSignal;
  /** The result (stdout): the same line or document `khrun run` prints for a run in this process. */
  write: (line: string) => void;
  /** Progress and errors (stderr). */
  warn: (line: string) => void;
}

/**
 * `khrun run` as a runner Job in the cluster (lib/rerun): progress on stderr as the Job's pod is scheduled,
 * runs and records; then the runner's result, printed and mapped to an exit code as a run here is (0
 * recorded, busy or superseded; 1 could not finish; 2 usage or configuration: no such object, khrun not
 * installed where looked, a request the caller may not make, a check a Kuberhealthy runs).
 */
export async function runInClusterCommand(opts: InClusterRunCommandOptions): Promise<number> {
  const startedMs = Date.now();
  const progress = (line: string) =>
    opts.warn(`${((Date.now() - startedMs) / 1000).toFixed(1)}s  ${safe(line, { keepNewlines: false })}`);
  const what = targetLabel(opts.target);
  try {
    const outcome = await rerunInCluster(
      { client: opts.client, progress, signal: opts.signal },
      { target: opts.target, template: opts.template },
    );
    switch (outcome.kind) {
      case 'document': {
        if (outcome.note)
          opts.warn(
            `khrun: ${safe(outcome.note)}; shown instead: the outcome the runner recorded in the state ` +
              '(it keeps no adopted or reportedAtMs)',
          );
        const { document } = outcome;
        opts.write(opts.output === 'text' ? runResultText(document) : formatDocument(document, opts.output));
        return documentExitCode(document);
      }
      case 'no-document':
        opts.warn(
          `khrun: run of ${safe(what)} in runner Job ${outcome.job.namespace}/${outcome.job.name}: ${safe(outcome.reason)}`,
        );
        return outcome.runnerExitCode === EXIT.usage ? EXIT.usage : EXIT.runnerError;
      case 'interrupted':
        opts.warn(`khrun: interrupted; ${jobKeepsRunning(outcome.job)}`);
        return EXIT.runnerError;
      case 'timed-out':
        opts.warn(
          `khrun: the runner Job ${outcome.job.namespace}/${outcome.job.name} did not finish within ` +
            `${Math.round(outcome.afterMs / 1000)}s (its deadline and a grace); see ` +
            `\`kubectl describe job ${outcome.job.name} -n ${outcome.job.namespace}\``,
        );
        return EXIT.runnerError;
    }
  } catch (error) {
    if (error instanceof ApiServerUnreachableError) throw error;
    if (error instanceof NotFoundError) {
      opts.warn(`khrun: ${safe(error.message, { keepNewlines: true })}`);
      return EXIT.usage;
    }
    if (error instanceof RerunError) {
      opts.warn(`khrun: ${safe(error.message, { keepNewlines: true })}`);
      return error.exitCode;
    }
    opts.warn(
      `khrun: run of ${safe(what)} in the cluster failed: ${safe(error instanceof Error ? error.message : String(error), { keepNewlines: true })}`,
    );
    return EXIT.runnerError;
  }
}
