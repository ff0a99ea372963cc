import { escapeControls } from '../core/terminal-text.ts';
import type { DocumentResult } from './convert-document.ts';
import { formatPath, type Json } from './field-path.ts';
import type { Finding, InputProblem } from './findings.ts';

const show = (value: Json) => (typeof value === 'string' ? value : JSON.stringify(value));

function findingText(f: Finding): string {
  const field = formatPath(f.field);
  switch (f.effect) {
    case 'lost':
    case 'note':
      return `${field}: ${f.reason}`;
    case 'defaulted':
    case 'changed':
      return `${field}: written as ${show(f.value)}: ${f.reason}`;
    case 'moved':
      return `${field}: moved to ${formatPath(f.to)}: ${f.reason}`;
  }
}

export const problemText = (p: InputProblem) =>
  `${p.field ? `${formatPath(p.field)} ` : ''}${p.problem}; ${p.remedy}`;

/**
 * The lines `khrun convert` writes on stderr about one document: one per finding or problem, each whole
 * (effect, resource, where it came from, field, why), so `grep '^lost:'` finds every loss. Text from the
 * input is escaped: a resource name is not allowed to move the cursor.
 */
export function reportLines(result: DocumentResult): string[] {
  const who = `${result.resource} (${result.origin})`;
  const line = (label: string, text: string) => escapeControls(`${label}: ${who}: ${text}`);
  switch (result.kind) {
    case 'converted':
      return result.findings.map((f) => line(f.effect, findingText(f)));
    case 'kept':
      return [escapeControls(`kept: ${who}: not a check; copied as it is`)];
    case 'dropped':
      return [line('dropped', result.reason)];
    case 'invalid':
      return result.problems.map((p) => line('invalid', problemText(p)));
  }
}
