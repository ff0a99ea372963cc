import { EXIT } from '../core/exit-codes.ts';
import type { RunTarget } from '../core/run-target.ts';
import { readKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';

/** `khrun run -o json`'s document: `check` (namespace/name), `result`, and what the result carries. */
export interface RunDocument {
  check: string;
  result: string;
  [field: string]: unknown;
}

const checkOf = (target: RunTarget) => `${target.namespace}/${target.name}`;

function parseObject(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The document the runner printed (`khrun run --output json`, the runner PodTemplate's arguments), from
 * its pod's log: the last line that is a JSON object naming the target in `check` with a string `result`.
 * The runner's own log lines are JSON too, but carry `level` and `message`; a checker's words inside
 * either are JSON-escaped, so no line of theirs can pass for the document. Pure.
 */
export function documentFromLog(log: string, target: RunTarget): RunDocument | undefined {
  const lines = log.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const object = parseObject((lines[i] ?? '').trim());
    if (!object || 'level' in object || 'message' in object) continue;
    if (object.check === checkOf(target) && typeof object.result === 'string') return object as RunDocument;
  }
  return undefined;
}

/**
 * The document of an outcome the Job's runner recorded, rebuilt from the state when the runner's log
 * cannot be read: what the khstate (or HealthCheck) holds of it, without `adopted` and `reportedAtMs`,
 * which it does not keep. Undefined unless a newer outcome than `before` was recorded by one of `pods`.
 * Pure.
 */
export function documentFromState(
  state: KhState | null,
  target: RunTarget,
  before: string | undefined,
  pods: readonly string[],
): RunDocument | undefined {
  if (!state) return undefined;
  const model = readKhState(state);
  const last = model.lastOutcome;
  if (!last || last.uuid === before || !pods.includes(model.spec.AuthoritativePod)) return undefined;
  return {
    check: checkOf(target),
    result: 'recorded',
    kind: last.kind,
    ok: model.spec.OK,
    errors: model.spec.Errors,
    node: model.spec.Node,
    durationMs: last.durationMs,
  };
}

/**
 * The exit code `khrun run` gives a result (lib/commands/exit-codes.ts): refused is 2, interrupted 1, the
 * rest (recorded, busy, superseded, already-ran, check-deleted) 0; a result this khrun does not know, 1.
 */
export function documentExitCode(document: RunDocument): number {
  switch (document.result) {
    case 'refused':
      return EXIT.usage;
    case 'recorded':
    case 'busy':
    case 'superseded':
    case 'already-ran':
    case 'check-deleted':
      return EXIT.ok;
    default:
      return EXIT.runnerError;
  }
}
