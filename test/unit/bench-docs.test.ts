import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { END as NOTIFY_END, START as NOTIFY_START, renderedAlertsPage } from '../bench/notify-table.ts';
import { measuredLine } from '../bench/provenance.ts';
import { renderPerformance } from '../bench/readme-render.ts';
import { renderV2Table } from '../compat/v2-table.ts';
import { renderV3Table } from '../compat/v3-table.ts';
import { readPage, repoRoot, withoutCode } from '../docs/pages.ts';

// Generated means generated: every generated block of the docs is what its generator renders from its
// results file, says when and on which build it was measured, and the pages that hold measured figures
// hold none typed by hand outside those blocks.

const data = (file: string) => JSON.parse(readFileSync(join(repoRoot, file), 'utf8'));

/** The text between `<!-- NAME:begin ... -->\n` and `<!-- NAME:end -->`. */
function block(page: string, name: string): string {
  const text = readPage(page);
  const begin = text.indexOf(`<!-- ${name}:begin`);
  const end = text.indexOf(`<!-- ${name}:end -->`);
  expect(begin, `${page}: <!-- ${name}:begin`).toBeGreaterThanOrEqual(0);
  return text.slice(text.indexOf('\n', begin) + 1, end);
}

describe('each generated block is what its generator renders from its results file', () => {
  it('compatibility.md: compat-v2 from bench/compat-v2.json, compat-v3 from bench/compat-v3.json', () => {
    expect(block('docs/compatibility.md', 'compat-v2'), 'stale: re-render from bench/compat-v2.json').toBe(
      renderV2Table(data('bench/compat-v2.json')),
    );
    expect(block('docs/compatibility.md', 'compat-v3'), 'stale: re-render from bench/compat-v3.json').toBe(
      renderV3Table(data('bench/compat-v3.json')),
    );
  });

  it('reliability.md: the faults block is the table of bench/faults.md', () => {
    const table = readFileSync(join(repoRoot, 'bench/faults.md'), 'utf8').replace(
      /^# Fault and abuse suite\n\n/,
      '',
    );
    expect(block('docs/reliability.md', 'faults')).toBe(table);
  });

  it('alerts.md: the figures are what test/bench/notify-table.ts renders from bench/notify.json', async () => {
    const { before, after } = await renderedAlertsPage();
    expect(before.indexOf(NOTIFY_START)).toBeLessThan(before.indexOf(NOTIFY_END));
    expect(before, 'stale: npx tsx test/bench/notify-table.ts').toBe(after);
  });
});

describe('every generated figure says when and on which build it was measured', () => {
  const meta = {
    date: '2026-11-30T21:16:16.049Z',
    mode: 'full',
    updates: [
      {
        sections: ['scale'],
        date: '2026-12-01T23:11:16.549Z',
        mode: 'full',
        build: { commit: '249820ad4d520fc1d729d904ccf26ec4ae3e08d2', dirty: false },
        loadAverage: [1.75, 3.82, 6.45],
      },
      {
        sections: ['scale', 'admission'],
        date: '2026-12-02T10:00:00.000Z',
        mode: 'quick',
        build: { commit: 'abcdefabcdefabcdef', dirty: true },
      },
    ],
  };

  it("takes a section's last update, else the full run, and says when the build was not recorded", () => {
    expect(measuredLine(meta, 'scale')).toBe(
      'Measured 2026-12-02 10:00 UTC, build abcdefabcdef + uncommitted changes (quick).',
    );
    expect(measuredLine({ ...meta, updates: [meta.updates[0] as never] }, 'scale')).toBe(
      'Measured 2026-12-01 23:11 UTC, build 249820ad4d52 (full; load average 1.75 / 3.82 / 6.45 at the end).',
    );
    expect(measuredLine(meta, 'overhead')).toBe('Measured 2026-11-30 21:16 UTC, build not recorded (full).');
  });

  it('renders that line under each section of the performance block', () => {
    const text = renderPerformance({
      meta,
      admission: {
        how: 'dry-run creates',
        rows: [{ khchecksInNamespace: 1, runnerMs: { n: 1, median: 1, min: 1, max: 1, iqr: 0 } }],
      },
      statusRender: {
        how: 'handler only',
        checks: 500,
        routes: [
          { label: 'JSON', ms: { n: 3, median: 2, min: 1, max: 3, iqr: 1 }, bytes: 2048, gzipBytes: 512 },
        ],
      },
    });
    expect(text).toContain('dry-run creates. Measured 2026-12-02 10:00 UTC, build abcdefabcdef');
    expect(text).toContain('### Rendering the status routes');
    expect(text).toContain('| JSON: 2 KiB, 1 KiB gzipped | in-process, handler only | 3 |');
    expect(text).toContain('handler only. Measured 2026-11-30 21:16 UTC, build not recorded (full).');
  });

  it("renders the admission section's API server CPU a create, and the policies' share, from its rows", () => {
    const summary = { n: 50, median: 9, min: 8, max: 12, iqr: 1 };
    const cell = (khchecksInNamespace: number, runner?: number, admin?: number) => ({
      khchecksInNamespace,
      runnerMs: summary,
      adminMs: summary,
      ...(runner === undefined ? {} : { runnerApiServerCpuMs: runner }),
      ...(admin === undefined ? {} : { adminApiServerCpuMs: admin }),
    });
    const text = renderPerformance({
      meta,
      admission: { how: 'dry-run creates', rows: [cell(25, 9.34, 6.97), cell(100, 19.1, 16.13), cell(500)] },
    });
    expect(text).toContain('| 25 | 9.3 ms | 7.0 ms | 2.4 ms |');
    expect(text).toContain('| 100 | 19.1 ms | 16.1 ms | 3.0 ms |');
    expect(text).not.toMatch(/^\| 500 \|/m);
    const without = renderPerformance({ meta, admission: { how: 'dry-run creates', rows: [cell(25)] } });
    expect(without).not.toContain('API server CPU a create');
  });

  it('the compat and faults blocks name their date and build', () => {
    for (const name of ['compat-v2', 'compat-v3'])
      expect(block('docs/compatibility.md', name)).toMatch(
        /Measured[^.]*\d{4}-\d\d-\d\d, build ([0-9a-f]{12}|not recorded)/,
      );
    expect(block('docs/reliability.md', 'faults')).toMatch(/Measured by `npm run faults` on \d{4}-\d\d-\d\d/);
  });
});

/**
 * Numbers with a unit of time, size, count of requests or a ratio, outside generated blocks and code: the
 * shape of a measured figure. What each page may state (a setting, a bound, a test's input, a version) is
 * listed with why; anything else is a figure typed by hand, to be generated or removed.
 */
const STATED: Record<string, Record<string, string>> = {
  'docs/performance.md': {},
  'docs/compatibility.md': {
    '1 s': "khrun's first look at a pod (a setting)",
    '10 s': "v2's fixed subtraction from RunDuration (its code)",
    '300s': 'part of the anchor of the v3.0.0 heading',
  },
  'docs/reliability.md': {
    '5 min': "the clock skew the scenario applies (a test's input)",
    '15 s': "the report endpoint's wait (a setting)",
    '30 s': "Node's request-timeout check interval and the exit grace (settings)",
    '50 MB': "the body the scenario sends (a test's input)",
  },
};

/** A number with a unit of time, size, requests or a ratio: the shape of a measured figure. */
const FIGURE = /\b\d[\d.,]*\s?(?:ms|s|min|minutes|seconds|MiB|KiB|GiB|MB|KB|requests?|×|%)(?![\w-])/g;

function figuresOutsideBlocks(page: string): string[] {
  const text = withoutCode(readPage(page))
    .replace(/<!-- ([a-z0-9-]+):begin[\s\S]*?<!-- \1:end -->/g, '')
    .replace(/<!-- bench:begin[\s\S]*?<!-- bench:end -->/g, '');
  return [...text.matchAll(FIGURE)].map((m) => m[0].replace(/\s+/, ' '));
}

describe('no measured figure typed by hand outside the generated blocks', () => {
  it.each(Object.keys(STATED))('%s', (page) => {
    const stray = figuresOutsideBlocks(page).filter((f) => !(f in (STATED[page] ?? {})));
    expect(stray, `${page}: generate these from a results file, or remove them`).toEqual([]);
  });

  it('catches one', () => {
    const page = 'docs/performance.md';
    expect(figuresOutsideBlocks(page)).toEqual([]);
    const sample = 'JSON 1.5 to 1.7 ms (153 KiB), 2.3× faster, 9 requests';
    expect([...sample.matchAll(FIGURE)].map((m) => m[0])).toEqual([
      '1.7 ms',
      '153 KiB',
      '2.3×',
      '9 requests',
    ]);
  });
});
