import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fleetBesideV3Markdown } from './fleet-v3-readme.ts';
import { kuberhealthyMarkdown } from './kh-readme.ts';
import { PERFORMANCE_PAGE, renderPerformance, replaceBetweenMarkers } from './readme-render.ts';

/** The sections rendered apart from readme-render.ts, in the order they appear after the run's phases. */
export const SECTION_RENDERERS = [kuberhealthyMarkdown, fleetBesideV3Markdown];

/**
 * What the generated block is rendered from: bench/results.json, and the tick-alone rows from
 * bench/tick-dispatch.json (test/bench/tick-dispatch.ts, run on its own) while results.json holds no
 * `tick` section.
 */
export async function performanceResults(root: string): Promise<Record<string, unknown>> {
  const results = JSON.parse(await readFile(join(root, 'bench/results.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  if (!results.tick) {
    const file = 'bench/tick-dispatch.json';
    const text = await readFile(join(root, file), 'utf8').catch(() => undefined);
    const dispatch = text ? (JSON.parse(text) as { figures?: unknown[]; build?: unknown }) : undefined;
    if (dispatch?.figures?.length)
      Object.assign(results, { tick: dispatch.figures, tickSource: { file, build: dispatch.build } });
  }
  return results;
}

/** docs/performance.md with its generated block rendered from the results files (pure but for reading them). */
export async function renderedPerformancePage(root: string): Promise<{ before: string; after: string }> {
  const before = await readFile(join(root, PERFORMANCE_PAGE), 'utf8');
  const body = renderPerformance(await performanceResults(root), SECTION_RENDERERS);
  return { before, after: replaceBetweenMarkers(before, body) };
}

/** Rewrites docs/performance.md's generated block from the results files; true when the text changed. */
export async function regenerateReadme(root: string): Promise<boolean> {
  const { before, after } = await renderedPerformancePage(root);
  if (after !== before) await writeFile(join(root, PERFORMANCE_PAGE), after);
  return after !== before;
}
