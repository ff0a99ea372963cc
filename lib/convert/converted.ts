import type { JsonObject } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';

/** One resource converted: the output resource and what did not carry over, or why it could not be. */
export type Converted =
  | { ok: true; output: JsonObject; findings: Finding[] }
  | { ok: false; problems: InputProblem[] };

/** Top-level keys every resource may carry; `status` is written by whoever runs the check, never carried. */
export const RESOURCE_KEYS = ['apiVersion', 'kind', 'metadata', 'spec', 'status'];
