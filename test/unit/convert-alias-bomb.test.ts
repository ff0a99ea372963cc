import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_YAML_ALIASES, parseDocuments } from '../../lib/convert/parse-documents.ts';

// A "billion laughs" text: nine levels of nine aliases each, 9^9 strings once expanded, under 1 KB.
function aliasBomb(): string {
  let text = `a: &a ["${'lol'.repeat(8)}", ${Array(8).fill('"lol"').join(', ')}]\n`;
  let previous = 'a';
  for (const name of 'bcdefghi') {
    text += `${name}: &${name} [${Array(9).fill(`*${previous}`).join(', ')}]\n`;
    previous = name;
  }
  return text;
}

describe('convert: YAML aliases', () => {
  it('refuses an alias bomb with a message naming the limit and what to do', () => {
    const text = aliasBomb();
    expect(text.length).toBeLessThan(1_000);
    expect(parseDocuments({ origin: 'bomb.yaml', text })).toEqual({
      problem: {
        origin: 'bomb.yaml',
        problem: expect.stringMatching(
          new RegExp(
            `^is refused: its aliases \\(\\*name\\) expand beyond ${MAX_YAML_ALIASES} references .*write the repeated parts out`,
          ),
        ),
      },
    });
  });

  it('refuses it without expanding it: the process stays small', () => {
    // In a process of its own, so the RSS measured is this parse's alone.
    const script = `
      const { parseDocuments } = await import(${JSON.stringify(resolve('lib/convert/parse-documents.ts'))});
      const before = process.memoryUsage().rss;
      const result = parseDocuments({ origin: 'bomb.yaml', text: ${JSON.stringify(aliasBomb())} });
      console.log(JSON.stringify({ refused: 'problem' in result, grewBytes: process.memoryUsage().rss - before, rss: process.memoryUsage().rss }));
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toBe('');
    const measured = JSON.parse(child.stdout) as { refused: boolean; grewBytes: number; rss: number };
    expect(measured.refused).toBe(true);
    // Expanded, the text is ~150 MB of strings and about 1 GB of RSS.
    expect(measured.grewBytes).toBeLessThan(32 * 1024 * 1024);
    expect(measured.rss).toBeLessThan(200 * 1024 * 1024);
  });

  it('still takes anchors a manifest uses', () => {
    const text = 'base: &env [{name: A, value: "1"}]\nother: *env\n';
    expect(parseDocuments({ origin: 'ok.yaml', text })).toEqual({
      documents: [
        {
          origin: 'ok.yaml',
          value: { base: [{ name: 'A', value: '1' }], other: [{ name: 'A', value: '1' }] },
          at: { document: 1 },
        },
      ],
    });
  });
});
