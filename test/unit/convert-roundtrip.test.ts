import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertDocument } from '../../lib/convert/convert-document.ts';
import {
  cloneJson,
  deletePath,
  getPath,
  isObject,
  type Json,
  type JsonObject,
  setPath,
} from '../../lib/convert/field-path.ts';
import type { Finding } from '../../lib/convert/findings.ts';
import { classifyDocument } from '../../lib/convert/kinds.ts';
import { parseDocuments, type SourceDocument } from '../../lib/convert/parse-documents.ts';

// Round trip on every khcheck, khjob and HealthCheck Kuberhealthy ships in v2.7.1's cmd/* (and its flat
// install and khjob guide) and in v3.0.0's docs, tests and deploy examples, vendored unchanged under
// test/fixtures/kuberhealthy (refresh.mjs): one way and back must give the input again, except exactly
// what the first leg reported, and the way back must report nothing.

const FIXTURES = join(import.meta.dirname, '../fixtures/kuberhealthy');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? filesUnder(join(dir, e.name))
      : /\.(ya?ml|md)$/i.test(e.name)
        ? [join(dir, e.name)]
        : [],
  );
}

/** The yaml code blocks of a Markdown document, each as its own text. */
function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ya?ml\s*\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '');
}

function checkDocuments(file: string): SourceDocument[] {
  const text = readFileSync(file, 'utf8');
  const origin = relative(FIXTURES, file);
  const texts = /\.md$/i.test(file) ? yamlBlocks(text) : [text];
  return texts.flatMap((t, i) => {
    const parsed = parseDocuments({
      origin: texts.length > 1 ? `${origin} block ${i + 1}` : origin,
      text: t,
    });
    if ('problem' in parsed) throw new Error(parsed.problem.problem);
    return parsed.documents.filter((d) => classifyDocument(d.value).kind === 'check');
  });
}

/** The input as the first leg's findings say it comes back: lost fields gone, the rest written. */
function expectedBack(original: JsonObject, findings: readonly Finding[]): JsonObject {
  const out = cloneJson(original);
  for (const f of findings) {
    if (f.effect === 'lost') deletePath(out, f.field);
    else if (f.effect === 'defaulted' || f.effect === 'changed') setPath(out, f.field, f.value);
    else if (f.effect === 'moved') {
      const value = getPath(out, f.field) as Json;
      deletePath(out, f.field);
      setPath(out, f.to, value);
    }
  }
  return out;
}

/**
 * What both sides treat as the same: unset and false singleRunOnly; absent, null (the API server drops a
 * null field) and empty maps; no status.
 */
function normalized(doc: JsonObject): JsonObject {
  const prune = (value: Json): Json | undefined => {
    if (Array.isArray(value)) return value.map((v) => prune(v) ?? null);
    if (value === null) return undefined;
    if (!isObject(value)) return value;
    const entries = Object.entries(value).flatMap(([k, v]) => {
      const p = prune(v);
      return p === undefined ? [] : [[k, p] as const];
    });
    return entries.length === 0 ? undefined : Object.fromEntries(entries);
  };
  const { status: _status, ...rest } = cloneJson(doc);
  if (isObject(rest.spec) && rest.spec.singleRunOnly === false) delete rest.spec.singleRunOnly;
  return (prune(rest) ?? {}) as JsonObject;
}

/** Kuberhealthy's own broken examples (containers a mapping; a container's fields loose in podSpec). */
const UPSTREAM_INVALID = new Set([
  'v2.7.1/cmd/test-check/test-check-set.yaml, document 5',
  'v2.7.1/cmd/test-check/test-check-set.yaml, document 6',
]);

const files = filesUnder(FIXTURES).sort();
const cases = files
  .map((f) => [relative(FIXTURES, f), checkDocuments(f)] as const)
  .filter(([, d]) => d.length);

describe('khrun convert round trip on Kuberhealthy’s own YAMLs', () => {
  it('finds the checks to test: every cmd/* khcheck of v2.7.1 and the v3.0.0 examples', () => {
    const names = cases.map(([f]) => f);
    expect(names.filter((f) => f.startsWith('v2.7.1/cmd/'))).toHaveLength(24);
    expect(names).toEqual(
      expect.arrayContaining([
        'v2.7.1/docs/JOBS.md',
        'v3.0.0/docs/healthchecks/DAEMONSET_CHECK.yaml',
        'v3.0.0/tests/healthcheck-test.yaml',
        'v3.0.0/tests/khjob-test.yaml',
        'v3.0.0/docs/CRD_REFERENCE.MD',
        'v3.0.0/deploy/kustomize/base/healthcheckExample.yaml',
      ]),
    );
  });

  it.each([
    ['kh-test-fail-bad-image', /not a list/],
    ['kh-test-fail-too-big', /image is set beside it/],
  ])(
    'refuses upstream %s, whose containers the API server refuses too, naming the field and the fix',
    (name, why) => {
      const doc = cases
        .find(([f]) => f === 'v2.7.1/cmd/test-check/test-check-set.yaml')?.[1]
        .find((d) => (d.value as { metadata: { name: string } }).metadata.name === name);
      const result = doc && convertDocument(doc);
      expect(result?.kind).toBe('invalid');
      expect(result?.kind === 'invalid' && result.problems).toEqual([
        expect.objectContaining({
          field: ['spec', 'podSpec', 'containers'],
          problem: expect.stringMatching(why),
        }),
      ]);
    },
  );

  it.each(cases)('%s: there and back gives the input, except what was reported', (_file, documents) => {
    for (const doc of documents) {
      if (UPSTREAM_INVALID.has(doc.origin)) continue;
      const there = convertDocument(doc);
      if (there.kind !== 'converted') throw new Error(`${doc.origin}: ${JSON.stringify(there)}`);
      const back = convertDocument({ origin: 'back', value: there.output });
      if (back.kind !== 'converted') throw new Error(`${doc.origin} back: ${JSON.stringify(back)}`);
      // The first leg wrote everything explicitly, so the way back has nothing to report (a note about
      // how v3 treats a run-once check is no change).
      expect(
        back.findings.filter((f) => f.effect !== 'note'),
        doc.origin,
      ).toEqual([]);
      expect(back.output.kind, doc.origin).toBe((doc.value as JsonObject).kind);
      expect(normalized(back.output), doc.origin).toEqual(
        normalized(expectedBack(doc.value as JsonObject, there.findings)),
      );
    }
  });
});
