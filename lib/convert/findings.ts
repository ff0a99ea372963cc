import type { FieldPath, Json } from './field-path.ts';

/**
 * What a conversion did not carry over as it was, per field of the input resource:
 * - `lost`: no counterpart on the other side; the field is not in the output (the exit code says so);
 * - `defaulted`: unset in the input; written with the value the input's side would have used, so the
 *   other side's different default does not change the behaviour silently;
 * - `changed`: written with another value that keeps what the input's side did (`value`);
 * - `moved`: written at another field (`to`, a path in the input's own shape) with the same effect;
 * - `note`: carried over, but the other side treats it differently; worth reading before switching.
 */
export type Finding =
  | { effect: 'lost'; field: FieldPath; reason: string }
  | { effect: 'defaulted' | 'changed'; field: FieldPath; value: Json; reason: string }
  | { effect: 'moved'; field: FieldPath; to: FieldPath; reason: string }
  | { effect: 'note'; field: FieldPath; reason: string };

/** Input that cannot be converted: nothing of it is written; the message says what to do. */
export interface InputProblem {
  field?: FieldPath;
  problem: string;
  remedy: string;
}

/** Whether a result carries a loss: the one thing a script must not miss (exit 3). */
export const isLoss = (f: Finding) => f.effect === 'lost';
