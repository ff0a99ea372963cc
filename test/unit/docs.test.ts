import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderedPerformancePage } from '../bench/readme.ts';
import { BEGIN, END } from '../bench/readme-render.ts';
import { COMPATIBILITY_PAGE } from '../compat/table.ts';
import { anchorsOf, docPages, markdownLinks, readPage, repoRoot } from '../docs/pages.ts';

// The user docs hang together: every relative link in README.md and docs/ reaches a file, every #anchor a
// heading of its page, and each generated block sits in the page its generator writes, once.

/**
 * Pages other branches of issue 24 add (the chart, monitoring, laptop rerun, alerts and release helpers):
 * linked from here already, absent until they are merged. Remove an entry once its file exists.
 */
const PENDING = new Set<string>([]);

describe('the docs link to what exists', () => {
  const pages = docPages();

  it('finds README.md and the pages of docs/', () => {
    expect(pages).toContain('README.md');
    expect(pages).toContain('docs/reference/cli.md');
    expect(pages.length).toBeGreaterThan(15);
  });

  it('computes anchors as GitHub does', () => {
    const page =
      "# A: b (c)\n## `khrun sync`\n```sh\n# not a heading\n```\n## A: b (c)\n### v3.0.0's controller\n";
    expect([...anchorsOf(page)]).toEqual(['a-b-c', 'khrun-sync', 'a-b-c-1', 'v300s-controller']);
  });

  it.each(pages)('%s: every relative link reaches a file, every anchor a heading', (page) => {
    const problems: string[] = [];
    for (const target of markdownLinks(readPage(page))) {
      const [path = '', anchor] = target.split('#');
      const file = path ? normalize(join(dirname(page), path)) : page;
      if (PENDING.has(file)) continue;
      if (!existsSync(join(repoRoot, file))) {
        problems.push(`${target}: no file ${file}`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !anchorsOf(readPage(file)).has(anchor))
        problems.push(`${target}: no heading #${anchor} in ${file}`);
    }
    expect(problems).toEqual([]);
  });

  it('leaves pending only files that do not exist yet (else remove them from PENDING)', () => {
    expect([...PENDING].filter((f) => existsSync(join(repoRoot, f)))).toEqual([]);
  });
});

describe('each generated block sits once in the page its generator writes', () => {
  const once = (page: string, begin: string, end: string) => {
    const text = readPage(page);
    expect(text.split(begin).length - 1, `${page}: ${begin}`).toBe(1);
    expect(text.split(end).length - 1, `${page}: ${end}`).toBe(1);
    expect(text.indexOf(begin)).toBeLessThan(text.indexOf(end));
  };

  it('bench in docs/performance.md, compat-v2 and compat-v3 in docs/compatibility.md, faults in docs/reliability.md', () => {
    once('docs/performance.md', BEGIN, END);
    once(COMPATIBILITY_PAGE, '<!-- compat-v2:begin', '<!-- compat-v2:end -->');
    once(COMPATIBILITY_PAGE, '<!-- compat-v3:begin', '<!-- compat-v3:end -->');
    once('docs/reliability.md', '<!-- faults:begin', '<!-- faults:end -->');
  });

  it('and nowhere else: the README holds none', () => {
    for (const page of docPages().filter((p) => p !== 'docs/performance.md'))
      expect(readPage(page)).not.toContain('<!-- bench:begin');
    expect(readPage('README.md')).not.toMatch(/<!-- (bench|compat-v2|compat-v3|faults):begin/);
  });

  it('docs/performance.md is what `npm run bench -- --readme-only` renders from the results files', async () => {
    const { before, after } = await renderedPerformancePage(repoRoot);
    expect(before, 'stale: run npm run bench -- --readme-only').toBe(after);
  });
});

describe('the README stays short', () => {
  it('is at most 300 lines', () => {
    expect(readPage('README.md').split('\n').length).toBeLessThanOrEqual(300);
  });
});
