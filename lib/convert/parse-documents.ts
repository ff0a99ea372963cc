import { parseAllDocuments, YAMLError } from 'yaml';
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
  /** Where in a file: the document's number in the stream (from 1), and the item's in a List (from 1). */
  at?: { document: number; item?: number };
}

/** Text that is neither YAML nor JSON: where, and the parser's own words (line and column). */
export interface SyntaxProblem {
  origin: string;
  problem: string;
}

/**
 * The most alias references one document may expand through (the `yaml` package's `maxAliasCount`): a
 * manifest needs a handful; a "billion laughs" text of a few hundred bytes needs millions.
 */
export const MAX_YAML_ALIASES = 100;

/** "Map keys must be unique at line 2, column 1:\n\n..." → "Map keys must be unique". */
const reasonOf = (message: string): string =>
  message.split('\n')[0]?.replace(/ at line \d+, column \d+:$/, '') ?? message;

/**
 * The resources in a YAML or JSON text: every document of a multi-document stream (empty ones skipped),
 * and the items of a List (`kubectl get -o yaml` prints one). Parsed with the YAML 1.2 core schema, so a
 * date-like value stays the string Kubernetes would see. A text whose aliases expand beyond
 * MAX_YAML_ALIASES is refused before it is expanded.
 */
export function parseDocuments(
  source: SourceText,
): { documents: SourceDocument[] } | { problem: SyntaxProblem } {
  const values: unknown[] = [];
  for (const doc of parseAllDocuments(source.text, { schema: 'core', merge: false })) {
    const error = doc.errors[0];
    if (error) {
      const at = error.linePos?.[0];
      const where = at ? ` (line ${at.line}, column ${at.col})` : '';
      return {
        problem: {
          origin: source.origin,
          problem: `is not YAML or JSON: ${reasonOf(error.message)}${where}`,
        },
      };
    }
    try {
      values.push(doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }));
    } catch (error) {
      if (!(error instanceof ReferenceError || error instanceof YAMLError)) throw error;
      return {
        problem: {
          origin: source.origin,
          problem: `is refused: its aliases (*name) expand beyond ${MAX_YAML_ALIASES} references (${error.message}); write the repeated parts out, or split the text`,
        },
      };
    }
  }
  const documents: SourceDocument[] = [];
  const many = values.length > 1;
  values.forEach((value, i) => {
    if (value === null || value === undefined) return;
    const origin = many ? `${source.origin}, document ${i + 1}` : source.origin;
    if (isList(value))
      value.items.forEach((item, j) => {
        documents.push({
          origin: `${origin}, item ${j + 1}`,
          value: item,
          at: { document: i + 1, item: j + 1 },
        });
      });
    else documents.push({ origin, value, at: { document: i + 1 } });
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
