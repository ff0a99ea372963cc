/**
 * The report body of `/externalCheckStatus`, read exactly as Kuberhealthy v2 reads it: Go's `encoding/json`
 * unmarshalling into `struct { Errors []string; OK bool }`. Existing check clients (Go, JS, Python, and
 * hand-rolled ones) were written against that behaviour, quirks included, so it is reproduced here rather
 * than "improved": keys match case-insensitively, unknown keys are ignored, duplicate keys apply in order.
 */

export interface Report {
  OK: boolean;
  Errors: string[];
}

export type ReportResult = { ok: true; report: Report } | { ok: false; reason: string };

export const REPORT_SHAPE = '{"OK": true|false, "Errors": ["..."]}';

/** Go's scanner refuses input nested deeper than this (`maxNestingDepth`). */
const MAX_NESTING_DEPTH = 10_000;

const JSON_WHITESPACE = /^[ \t\r\n]*$/;
// Go decodes an unpaired surrogate escape such as "\ud800" to U+FFFD; JSON.parse keeps it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const fail = (problem: string): ReportResult => ({
  ok: false,
  reason: `${problem}; send a JSON object such as ${REPORT_SHAPE}`,
});

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value);
  return `a ${typeof value} (${text.length > 40 ? `${text.slice(0, 40)}...` : text})`;
}

/**
 * Which struct field a key selects. Go folds case with Unicode simple folding, under which the Kelvin sign
 * (U+212A) equals "k" and the long s (U+017F) equals "s"; no other non-ASCII letter folds into "ok" or "errors".
 */
function fieldFor(key: string): 'OK' | 'Errors' | undefined {
  const folded = key
    .replace(/[A-Z]/g, (c) => c.toLowerCase())
    .replace(/\u212A/g, 'k')
    .replace(/\u017F/g, 's');
  if (folded === 'ok') return 'OK';
  if (folded === 'errors') return 'Errors';
  return undefined;
}

/** Index just past the string literal opening at `start`, in text already known to be valid JSON. */
function skipString(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

function maxNesting(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') i = skipString(text, i) - 1;
    else if (c === '{' || c === '[') max = Math.max(max, ++depth);
    else if (c === '}' || c === ']') depth--;
  }
  return max;
}

/**
 * The top-level object's members in source order, duplicates included: JSON.parse keeps only a duplicate
 * key's last value, at the first one's position, while Go decodes every occurrence, in order, into the same
 * field. `text` must already be known to be a valid JSON object.
 */
function* members(text: string): Generator<{ key: string; value: unknown }> {
  let i = text.indexOf('{') + 1;
  const skipSpace = (): void => {
    while (/[ \t\r\n]/.test(text[i] ?? '')) i++;
  };
  skipSpace();
  while (text[i] === '"') {
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = keyEnd;
    skipSpace();
    i++; // ':'
    const valueStart = i;
    let depth = 0;
    for (; i < text.length && (depth > 0 || (text[i] !== ',' && text[i] !== '}')); i++) {
      const c = text[i];
      if (c === '"') i = skipString(text, i) - 1;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') depth--;
    }
    yield { key, value: JSON.parse(text.slice(valueStart, i)) };
    if (text[i] === ',') i++;
    skipSpace();
  }
}

/**
 * Parses a report body as Go's `json.Unmarshal` into v2's `status.Report` would, accepting exactly what v2
 * accepted: `null` is the zero report, a missing `OK` is false, missing or null `Errors` is empty, a null
 * item in `Errors` is "" (or, with a duplicate `Errors` key, whatever Go's reused slice held there). Every
 * wrong type is an error even if a later duplicate key would have been fine, because Go reports it too.
 * Does not judge the report's meaning; see `gateReport`.
 */
export function parseReportBody(raw: string): ReportResult {
  if (JSON_WHITESPACE.test(raw)) return fail('the report body is empty');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    return fail(`the report body is not valid JSON (${(error as Error).message})`);
  }
  if (maxNesting(raw) > MAX_NESTING_DEPTH) {
    return fail(`the report body nests more than ${MAX_NESTING_DEPTH} levels deep`);
  }
  if (parsed === null) return { ok: true, report: { OK: false, Errors: [] } };
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return fail(`the report body is ${describe(parsed)}, not a JSON object`);
  }

  let OK = false;
  // Go decodes a repeated array into the slice it already has, so null items keep the old element there.
  let backing: string[] = [];
  let length = 0;
  let firstProblem: string | undefined;
  for (const { key, value } of members(raw)) {
    const field = fieldFor(key);
    if (field === 'OK') {
      if (typeof value === 'boolean') {
        OK = value;
      } else if (value !== null) {
        firstProblem ??= `${JSON.stringify(key)} must be true or false, not ${describe(value)}`;
      }
    } else if (field === 'Errors') {
      if (value === null) {
        backing = [];
        length = 0;
      } else if (!Array.isArray(value)) {
        firstProblem ??= `${JSON.stringify(key)} must be an array of strings, not ${describe(value)}`;
      } else {
        if (value.length === 0) backing = [];
        value.forEach((item: unknown, index) => {
          if (typeof item === 'string') backing[index] = item.replace(LONE_SURROGATE, '\uFFFD');
          else {
            backing[index] ??= '';
            if (item !== null) {
              firstProblem ??= `${JSON.stringify(key)}[${index}] must be a string, not ${describe(item)}`;
            }
          }
        });
        length = value.length;
      }
    }
  }
  if (firstProblem !== undefined) return fail(firstProblem);
  return { ok: true, report: { OK, Errors: backing.slice(0, length) } };
}

/**
 * Decides whether a parsed report may be recorded. As in v2, a failure must carry at least one error;
 * stricter than v2, no error may be blank or whitespace (v2 rejected only "", and only when OK was false).
 * `OK: true` together with errors is accepted, as v2 accepted it, but recorded as a failure: after the run
 * v2 rewrites the khstate with OK taken from `len(Errors) == 0` (external `Checker.CurrentStatus`), so a
 * report with errors never ends up healthy.
 */
export function gateReport(report: Report): ReportResult {
  if (!report.OK && report.Errors.length === 0) {
    return {
      ok: false,
      reason: `"OK" is false but "Errors" is empty; a failing check must say why, e.g. {"OK": false, "Errors": ["what went wrong"]}`,
    };
  }
  const blankIndex = report.Errors.findIndex((message) => message.trim() === '');
  if (blankIndex !== -1) {
    return {
      ok: false,
      reason: `"Errors"[${blankIndex}] is empty or only whitespace; every error must say what went wrong`,
    };
  }
  return { ok: true, report: { OK: report.Errors.length === 0, Errors: [...report.Errors] } };
}
