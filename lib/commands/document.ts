import { dumpYaml } from '@kubernetes/client-node';

export type DocumentFormat = 'json' | 'yaml';

/**
 * A command's result for scripts (-o json|yaml): JSON on one line (one object per line, as jq reads a
 * stream), YAML as kubectl prints it, without the trailing newline (the writer adds one).
 */
export function formatDocument(value: unknown, format: DocumentFormat): string {
  return format === 'json' ? JSON.stringify(value) : dumpYaml(value).trimEnd();
}
