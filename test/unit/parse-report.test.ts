import { describe, expect, it } from 'vitest';
import { gateReport, parseReportBody, REPORT_SHAPE, type Report } from '../../lib/report/parse-report.ts';

// Expected values were checked against Go's json.Unmarshal into struct { Errors []string; OK bool }.

describe('parseReportBody accepts what Go accepts', () => {
  it.each<[string, Report]>([
    ['{"OK":true,"Errors":[]}', { OK: true, Errors: [] }],
    ['{"Errors":["disk full","dns slow"],"OK":false}', { OK: false, Errors: ['disk full', 'dns slow'] }],
    [' \n{"OK" :\ttrue }\r\n', { OK: true, Errors: [] }],
    ['null', { OK: false, Errors: [] }],
    [' null ', { OK: false, Errors: [] }],
    ['{}', { OK: false, Errors: [] }],
    // keys match case-insensitively, as Go's decoder folds them
    ['{"ok":true,"errors":[]}', { OK: true, Errors: [] }],
    ['{"Ok":false,"ERRORS":["x"]}', { OK: false, Errors: ['x'] }],
    ['{"oK":true}', { OK: true, Errors: [] }],
    ['{"\\u004fK":true}', { OK: true, Errors: [] }],
    ['{"o\u212a":true}', { OK: true, Errors: [] }], // Kelvin sign folds to k
    ['{"error\u017f":["q"]}', { OK: false, Errors: ['q'] }], // long s folds to s
    // unknown keys are ignored, whatever they hold
    ['{"OK":true,"extra":{"a":[1,{"b":"}]"}]},"Err":5}', { OK: true, Errors: [] }],
    ['{"O K":true,"OKK":true}', { OK: false, Errors: [] }],
    ['{"a\\"b":"\\"","OK":true}', { OK: true, Errors: [] }],
    ['{"Errors":["say \\"hi"],"OK":false}', { OK: false, Errors: ['say "hi'] }],
    // null means "leave as is": the zero value unless a duplicate key set it before
    ['{"OK":null,"Errors":null}', { OK: false, Errors: [] }],
    ['{"OK":true,"OK":null}', { OK: true, Errors: [] }],
    ['{"Errors":["a",null,"c"]}', { OK: false, Errors: ['a', '', 'c'] }],
    // duplicate keys apply in order, the last one wins
    ['{"ok":true,"Ok":false}', { OK: false, Errors: [] }],
    ['{"Errors":["a"],"Errors":[]}', { OK: false, Errors: [] }],
    // Go decodes a repeated array into the slice it already holds
    ['{"Errors":["a","b"],"Errors":[null]}', { OK: false, Errors: ['a'] }],
    [
      '{"Errors":["a","b","c"],"Errors":["x"],"Errors":[null,null,null]}',
      { OK: false, Errors: ['x', 'b', 'c'] },
    ],
    ['{"Errors":["a"],"Errors":[],"Errors":[null]}', { OK: false, Errors: [''] }],
    // escapes decode as Go decodes them; an unpaired surrogate becomes U+FFFD
    ['{"Errors":["tab\\there \\"q\\" \\\\"]}', { OK: false, Errors: ['tab\there "q" \\'] }],
    [
      '{"Errors":["\\ud800","\\udc00x\\ud83d\\ude00"]}',
      { OK: false, Errors: ['\uFFFD', '\uFFFDx\u{1F600}'] },
    ],
  ])('%j', (raw, report) => {
    expect(parseReportBody(raw)).toEqual({ ok: true, report });
  });

  it('accepts nesting up to Go`s limit of 10000 levels', () => {
    const nested = (depth: number) => `{"x":${'['.repeat(depth)}${']'.repeat(depth)},"OK":true}`;
    expect(parseReportBody(nested(9_999)).ok).toBe(true);
    expect(parseReportBody(nested(10_000))).toEqual({
      ok: false,
      reason: `the report body nests more than 10000 levels deep; send a JSON object such as ${REPORT_SHAPE}`,
    });
  });
});

describe('parseReportBody rejects what Go rejects, saying what to send', () => {
  it.each([
    ['', 'the report body is empty'],
    [' \r\n\t', 'the report body is empty'],
    ['[]', 'the report body is an array, not a JSON object'],
    ['"OK"', 'the report body is a string ("OK"), not a JSON object'],
    ['true', 'the report body is a boolean (true), not a JSON object'],
    ['1', 'the report body is a number (1), not a JSON object'],
    ['{"OK":"true"}', '"OK" must be true or false, not a string ("true")'],
    ['{"ok":1}', '"ok" must be true or false, not a number (1)'],
    ['{"OK":[]}', '"OK" must be true or false, not an array'],
    ['{"OK":{}}', '"OK" must be true or false, not an object'],
    ['{"Errors":"x"}', '"Errors" must be an array of strings, not a string ("x")'],
    ['{"errors":{}}', '"errors" must be an array of strings, not an object'],
    ['{"Errors":false}', '"Errors" must be an array of strings, not a boolean (false)'],
    ['{"Errors":[1]}', '"Errors"[0] must be a string, not a number (1)'],
    ['{"Errors":["a",true]}', '"Errors"[1] must be a string, not a boolean (true)'],
    ['{"Errors":[[]]}', '"Errors"[0] must be a string, not an array'],
    // Go reports the first type error even when a later duplicate would be fine
    ['{"OK":"x","OK":true}', '"OK" must be true or false, not a string ("x")'],
    ['{"Errors":[1],"OK":"no"}', '"Errors"[0] must be a string, not a number (1)'],
    [`{"OK":"${'y'.repeat(100)}"}`, `"OK" must be true or false, not a string ("${'y'.repeat(39)}...)`],
  ])('%j', (raw, problem) => {
    expect(parseReportBody(raw)).toEqual({
      ok: false,
      reason: `${problem}; send a JSON object such as {"OK": true|false, "Errors": ["..."]}`,
    });
  });

  it.each([
    '{} {}',
    '{}x',
    '{"OK":true}garbage',
    '{"OK":true,}',
    "{'OK':true}",
    '{"OK":tru}',
    '{OK:true}',
    '\ufeff{}',
    '{"Errors":["unterminated]}',
    '{"Errors":["raw\nnewline"]}',
  ])('%j is not valid JSON', (raw) => {
    const result = parseReportBody(raw);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(
      /^the report body is not valid JSON \(.+\); send a JSON object/,
    );
  });
});

describe('gateReport', () => {
  it.each<[Report, Report]>([
    [
      { OK: true, Errors: [] },
      { OK: true, Errors: [] },
    ],
    [
      { OK: false, Errors: ['dns timeout'] },
      { OK: false, Errors: ['dns timeout'] },
    ],
    // v2 accepted OK=true with errors, and its final khstate made it a failure
    [
      { OK: true, Errors: ['disk 91% full'] },
      { OK: false, Errors: ['disk 91% full'] },
    ],
  ])('accepts %j as %j', (report, expected) => {
    const result = gateReport(report);
    expect(result).toEqual({ ok: true, report: expected });
    expect(result.ok && result.report.Errors).not.toBe(report.Errors);
  });

  it.each<[Report, RegExp]>([
    [{ OK: false, Errors: [] }, /^"OK" is false but "Errors" is empty/],
    [{ OK: false, Errors: [''] }, /^"Errors"\[0\] is empty or only whitespace/],
    [{ OK: false, Errors: ['real', ' \t\n'] }, /^"Errors"\[1\] is empty or only whitespace/],
    [{ OK: true, Errors: ['\u00a0'] }, /^"Errors"\[0\] is empty or only whitespace/],
  ])('rejects %j', (report, reason) => {
    const result = gateReport(report);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(reason);
  });

  it('composes with parseReportBody the way the report endpoint uses them', () => {
    const parsed = parseReportBody('{"ok":false}');
    expect(parsed.ok && gateReport(parsed.report).ok).toBe(false);
  });
});
