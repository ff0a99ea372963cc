import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The user documentation: README.md and every Markdown page under docs/, as paths from the repository root.

export const repoRoot = resolve(import.meta.dirname, '../..');

/** README.md, then docs/**\/*.md in a stable order. */
export function docPages(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((p) => p.endsWith('.md'))
    .map((p) => join('docs', p))
    .sort();
  return ['README.md', ...docs];
}

export const readPage = (page: string) => readFileSync(join(repoRoot, page), 'utf8');

/** The text without fenced code blocks (their `#` lines are shell comments, their brackets not links). */
export const withoutCode = (markdown: string) => markdown.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, text] of withoutCode(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*$/gm)) {
    const slug = (text ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n ? `${slug}-${n}` : slug);
  }
  return anchors;
}

/** Every relative link target of a page: `[text](target)`, outside code. */
export function markdownLinks(markdown: string): string[] {
  const text = withoutCode(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '').filter((t) => !/^[a-z]+:/i.test(t));
}
