import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kuberhealthyMarkdown } from './kh-readme.ts';
import { renderPerformance, replaceBetweenMarkers } from './readme-render.ts';

/** Rewrites README.md's Performance section from bench/results.json; true when the text changed. */
export async function regenerateReadme(root: string): Promise<boolean> {
  const results = JSON.parse(await readFile(join(root, 'bench/results.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const path = join(root, 'README.md');
  const before = await readFile(path, 'utf8');
  const after = replaceBetweenMarkers(before, renderPerformance(results, [kuberhealthyMarkdown]));
  if (after !== before) await writeFile(path, after);
  return after !== before;
}
