import { parseDocuments } from '../convert/parse-documents.ts';
import { escapeControls } from '../core/terminal-text.ts';
import { formatDocument } from './document.ts';
import { type ValidatedDocument, validateDocument } from './validate-document.ts';

/** `khrun validate`'s exit codes: every check valid; one invalid; a file that cannot be read (usage). */
export const VALIDATE_EXIT = { valid: 0, invalid: 1, usage: 2 } as const;

export interface ValidateCommandOptions {
  /** -f paths in order; `-` is stdin. */
  files: readonly string[];
  output: 'text' | 'json' | 'yaml';
  /** A file's text; `-` is stdin. Throws when it cannot be read. */
  readInput: (path: string) => Promise<string>;
  write: (line: string) => void;
  warn: (line: string) => void;
}

/** What `khrun validate -o json|yaml` prints: the verdict, the counts, and every document with its problems. */
export interface ValidateReport {
  valid: boolean;
  checks: { valid: number; invalid: number };
  skipped: number;
  documents: ValidatedDocument[];
}

/** The documents of every file, validated; a file that is not YAML is one invalid entry with the parser's words. */
export async function validateFiles(
  opts: Pick<ValidateCommandOptions, 'files' | 'readInput'>,
): Promise<{ documents: ValidatedDocument[]; unreadable: string[] }> {
  const documents: ValidatedDocument[] = [];
  const unreadable: string[] = [];
  for (const path of opts.files) {
    const file = path === '-' ? '<stdin>' : path;
    let text: string;
    try {
      text = await opts.readInput(path);
    } catch (error) {
      unreadable.push(`${file}: cannot be read (${(error as Error).message})`);
      continue;
    }
    const parsed = parseDocuments({ origin: file, text });
    if ('problem' in parsed) {
      documents.push({
        file,
        result: 'invalid',
        problems: [{ severity: 'error', message: `the file ${parsed.problem.problem}` }],
      });
      continue;
    }
    for (const doc of parsed.documents) documents.push(validateDocument(file, doc));
  }
  return { documents, unreadable };
}

/** `checks.yaml, document 2, item 1: KuberhealthyCheck checks/ping` */
export function documentLabel(d: ValidatedDocument): string {
  const where = [
    d.file,
    ...(d.document !== undefined ? [`document ${d.document}`] : []),
    ...(d.item !== undefined ? [`item ${d.item}`] : []),
  ].join(', ');
  if (d.kind === undefined) return where;
  const name = d.name === undefined ? '(no name)' : `${d.namespace ? `${d.namespace}/` : ''}${d.name}`;
  return `${where}: ${d.kind} ${name}`;
}

export function validateReport(documents: ValidatedDocument[]): ValidateReport {
  const count = (result: ValidatedDocument['result']) => documents.filter((d) => d.result === result).length;
  return {
    valid: count('invalid') === 0,
    checks: { valid: count('valid'), invalid: count('invalid') },
    skipped: count('skipped'),
    documents,
  };
}

/** The report for a person: one line per problem, then a summary line. Input text is escaped. */
export function validateText(report: ValidateReport): string[] {
  const lines = report.documents.flatMap((d) =>
    d.problems.map((p) =>
      escapeControls(`${documentLabel(d)}: ${p.severity}: ${p.field ? `${p.field}: ` : ''}${p.message}`),
    ),
  );
  const { valid, invalid } = report.checks;
  const warnings = report.documents.flatMap((d) => d.problems).filter((p) => p.severity === 'warning').length;
  lines.push(
    `validate: ${valid + invalid} checks, ${valid} valid, ${invalid} invalid` +
      (warnings ? `, ${warnings} warnings` : '') +
      (report.skipped ? `; ${report.skipped} other documents not checked` : ''),
  );
  return lines;
}

/**
 * `khrun validate -f FILE...`: offline, no cluster. Exit 0 when every check is valid (warnings allowed), 1
 * when any is invalid, 2 when a file cannot be read (the others are still validated and shown). stdout:
 * the report (with -o json|yaml only the document); stderr: files that cannot be read.
 */
export async function validateCommand(opts: ValidateCommandOptions): Promise<number> {
  const { documents, unreadable } = await validateFiles(opts);
  const report = validateReport(documents);
  if (opts.output === 'text') for (const line of validateText(report)) opts.write(line);
  else opts.write(formatDocument(report, opts.output));
  for (const problem of unreadable) opts.warn(escapeControls(`khrun: validate: ${problem}`));
  if (unreadable.length > 0) return VALIDATE_EXIT.usage;
  return report.valid ? VALIDATE_EXIT.valid : VALIDATE_EXIT.invalid;
}
