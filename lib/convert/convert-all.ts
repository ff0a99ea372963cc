import { convertDocument, type DocumentResult } from './convert-document.ts';
import type { JsonObject } from './field-path.ts';
import { isLoss } from './findings.ts';
import type { SourceDocument } from './parse-documents.ts';

/**
 * The whole input's verdict, for the exit code: `invalid` (something cannot be converted: nothing is
 * written), `empty` (no khcheck, khjob or HealthCheck at all), `lossy` (converted, with at least one
 * field lost) or `clean`.
 */
export type Verdict = 'invalid' | 'empty' | 'lossy' | 'clean';

export interface ConvertResult {
  results: DocumentResult[];
  /** The output resources in input order (converted and kept); empty unless the verdict is lossy or clean. */
  outputs: JsonObject[];
  /** The converted ones alone (what --apply creates). */
  converted: JsonObject[];
  verdict: Verdict;
}

/** Converts every document; one invalid document stops the whole output (nothing half-converted). */
export function convertAll(documents: readonly SourceDocument[]): ConvertResult {
  const results = documents.map(convertDocument);
  const converted = results.flatMap((r) => (r.kind === 'converted' ? [r.output] : []));
  const verdict: Verdict = results.some((r) => r.kind === 'invalid')
    ? 'invalid'
    : converted.length === 0
      ? 'empty'
      : results.some((r) => r.kind === 'converted' && r.findings.some(isLoss))
        ? 'lossy'
        : 'clean';
  const writable = verdict === 'lossy' || verdict === 'clean';
  return {
    results,
    outputs: writable
      ? results.flatMap((r) => (r.kind === 'converted' || r.kind === 'kept' ? [r.output] : []))
      : [],
    converted: writable ? converted : [],
    verdict,
  };
}
