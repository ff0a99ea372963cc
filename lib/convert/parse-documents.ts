import { CORE_SCHEMA, loadAll, YAMLException } from 'js-yaml';
import { isObject } from './field-path.ts';

/** Text to convert and where it came from (a file name, `<stdin>`), for messages. */
export interface SourceText {
  origin: string;
  text: string;
}

/** One resource of the input and where it is: `checks.yaml, document 2` or `khcheck ns/name`. */
export interface SourceDocument {
  origin: string;
  value: unknown;
}

/** Text that is neither YAML nor JSON: where, and the parser's own words (line and column). */
export interface SyntaxProblem {
  origin: string;
  problem: string;
}

/**
 * The resources in a YAML or JSON text: every document of a multi-document stream (empty ones skipped),
 * and the items of a List (`kubectl get -o yaml` prints one). Parsed with the YAML core schema, so a date-
 * like value stays the string Kubernetes would see.
 */
export function parseDocuments(
  source: SourceText,
): { documents: SourceDocument[] } | { problem: SyntaxProblem } {
  let values: unknown[];
  try {
    values = loadAll(source.text, null, { filename: source.origin, schema: CORE_SCHEMA });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    return {
      problem: {
        origin: source.origin,
        problem: `is not YAML or JSON: ${error.reason} (line ${error.mark.line + 1}, column ${error.mark.column + 1})`,
      },
    };
  }
  const documents: SourceDocument[] = [];
  const many = values.length > 1;
  values.forEach((value, i) => {
    if (value === null || value === undefined) return;
    const origin = many ? `${source.origin}, document ${i + 1}` : source.origin;
    if (isList(value))
      value.items.forEach((item, j) => {
        documents.push({ origin: `${origin}, item ${j + 1}`, value: item });
      });
    else documents.push({ origin, value });
  });
  return { documents };
}

/** `kind: List` (or `KuberhealthyCheckList`, `HealthCheckList`) with its items. */
function isList(value: unknown): value is { items: unknown[] } {
  return (
    isObject(value) &&
    typeof value.kind === 'string' &&
    value.kind.endsWith('List') &&
    Array.isArray(value.items)
  );
}
