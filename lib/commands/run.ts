import { EXIT } from '../core/exit-codes.ts';
import type { RunTarget } from '../core/run-target.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { JobNotFoundError } from '../job/run-khjob.ts';
import { loggableError } from '../kube/errors.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import { runTarget } from '../session/run-target.ts';
import type { SessionSettings } from '../session/session.ts';
import { formatDocument } from './document.ts';
import { runExitCode, runResultJson } from './job-run.ts';

/**
 * How a run command prints: the format, the writer of its result (stdout: with json or yaml nothing else),
 * where its errors go (stderr), and a person's progress lines.
 */
export interface CommandOutput {
  output: 'text' | 'json' | 'yaml';
  write: (line: string) => void;
  warn: (line: string) => void;
  /** Progress lines for a person at a terminal; undefined when not on one. */
  progress?: (line: string) => void;
}

/**
 * `khrun run` for one object. The session settings (lib/session/session.ts) include where checker pods report
 * (lib/config/report-address.ts decides) and takeOver: run even a check a Kuberhealthy runs (--take-over,
 * KHRUN_TAKE_OVER); else such a run is refused, exit 2.
 */
export interface RunCommandOptions extends SessionSettings, CommandOutput {
  /** The object to run: a khcheck (`--check`), a khjob (`--job`) or a HealthCheck (`--healthcheck`). */
  target: RunTarget;
  signal: AbortSignal;
  /** Called at each phase of the iteration (claimed, pod created, ...), independently of progress. */
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
}

/** `khrun run`: one iteration, mapped to an exit code. Infrastructure errors are exit 1, usage errors 2. */
export async function runCommand(opts: RunCommandOptions): Promise<number> {
  const startedMs = Date.now();
  try {
    const { target } = opts;
    const result = await runTarget(opts, {
      target,
      signal: opts.signal,
      onPhase:
        opts.progress || opts.onPhase
          ? (phase, extra) => {
              opts.progress?.(
                `${((Date.now() - startedMs) / 1000).toFixed(1)}s  ${phase}${extra?.pod ? ` ${extra.pod}` : ''}`,
              );
              opts.onPhase?.(phase, extra);
            }
          : undefined,
    });
    const json = runResultJson(result, target);
    opts.write(opts.output === 'text' ? runResultText(json) : formatDocument(json, opts.output));
    return runExitCode(result);
  } catch (error) {
    if (error instanceof CheckNotFoundError || error instanceof JobNotFoundError) {
      opts.warn(`khrun: ${safe(error.message, { keepNewlines: true })}`);
      return EXIT.usage;
    }
    opts.log.error('runner failed', { error: loggableError(error) });
    opts.warn(
      `khrun: run of ${opts.target.namespace}/${opts.target.name} failed: ${safe(error instanceof Error ? error.message : String(error), { keepNewlines: true })}`,
    );
    return EXIT.runnerError;
  }
}

/**
 * The line `khrun run` prints for a person, then one line per error. The errors are the checker's words:
 * each is shown on its own line with every control character escaped, a newline in it included, so no
 * error can draw on the terminal or pass for a line of khrun's.
 */
export function runResultText(json: { check: string; result: string; [field: string]: unknown }): string {
  const j = json as Record<string, unknown>;
  if (j.result === 'recorded') {
    const errors = ((j.errors as string[] | undefined) ?? []).map((e) => safe(e));
    return `${safe(String(j.check))}: ${safe(String(j.kind))} in ${((j.durationMs as number) / 1000).toFixed(2)}s${errors.length ? `\n  ${errors.join('\n  ')}` : ''}`;
  }
  return safe(`${j.check}: ${j.result}${j.reason ? ` (${j.reason})` : ''}`);
}
