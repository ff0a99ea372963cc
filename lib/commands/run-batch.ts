import { type BatchEntry, entryLabel } from '../batch/batch-entry.ts';
import {
  type BatchCheckResult,
  batchExitCode,
  checkResultJson,
  type RunResultMapping,
} from '../batch/batch-result.ts';
import { runBatchInSession } from '../batch/run-batch.ts';
import { EXIT } from '../core/exit-codes.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { loggableError } from '../kube/errors.ts';
import type { SessionSettings } from '../session/session.ts';
import { formatDocument } from './document.ts';
import { runExitCode, runResultJson } from './job-run.ts';
import { type CommandOutput, runResultText } from './run.ts';

export interface BatchCommandOptions extends SessionSettings, CommandOutput {
  checks: BatchEntry[];
  signal: AbortSignal;
  /** Called at each phase of each check's iteration (the fault suite's failpoint). */
  onPhase?: (check: BatchEntry, phase: string, extra?: Record<string, unknown>) => void;
}

/** A check's result in a batch maps as `khrun run --check` maps it alone. */
export const SINGLE_RUN: RunResultMapping = { exitCode: runExitCode, json: runResultJson };

/**
 * `khrun run` with many khchecks: one runner session (one API client, one report endpoint) drives them all
 * at once, and prints one entry per check in the list's order: a line of text each, or one JSON object per
 * line, or one YAML document each. Exit code: lib/batch/batch-result.ts's batchExitCode (0 when every check
 * would exit 0 alone). A session that cannot start (the endpoint's port taken) is exit 1 before any claim.
 */
export async function runBatchCommand(opts: BatchCommandOptions): Promise<number> {
  const startedMs = Date.now();
  let results: BatchCheckResult[];
  try {
    results = await runBatchInSession(
      {
        ...opts,
        signal: opts.signal,
        onPhase:
          opts.progress || opts.onPhase
            ? (check, phase, extra) => {
                const s = ((Date.now() - startedMs) / 1000).toFixed(1);
                opts.progress?.(`${s}s  ${entryLabel(check)}  ${phase}${extra?.pod ? ` ${extra.pod}` : ''}`);
                opts.onPhase?.(check, phase, extra);
              }
            : undefined,
      },
      opts.checks,
    );
  } catch (error) {
    opts.log.error('batch runner failed', { error: loggableError(error) });
    const message = error instanceof Error ? error.message : String(error);
    opts.warn(
      `khrun: batch of ${opts.checks.length} checks failed: ${safe(message, { keepNewlines: true })}`,
    );
    return EXIT.runnerError;
  }
  opts.write(batchOutput(results, opts.output));
  return batchExitCode(results, SINGLE_RUN);
}

/** The batch's output: one entry per check, as a single run prints its own. Pure. */
export function batchOutput(results: readonly BatchCheckResult[], output: 'text' | 'json' | 'yaml'): string {
  const entries = results.map((r) => checkResultJson(r, SINGLE_RUN) as { check: string; result: string });
  if (output === 'json') return entries.map((e) => formatDocument(e, 'json')).join('\n');
  if (output === 'yaml') return entries.map((e) => formatDocument(e, 'yaml')).join('\n---\n');
  return entries
    .map((e) => {
      const j = e as Record<string, unknown>;
      return runResultText(j.result === 'failed' ? { ...e, reason: j.error } : e);
    })
    .join('\n');
}
