import { buildText } from './source-build.ts';

// When, on what build and under what load a section of bench/results.json was measured (pure): its last
// entry in meta.updates (an --only run), else the full run's meta. Every section of the generated block
// says it, so no figure reads as newer than it is.

interface Build {
  commit?: string;
  dirty?: boolean;
}
interface Entry {
  date?: string;
  mode?: string;
  build?: Build;
  loadAverage?: number[];
  sections?: string[];
}
export interface Meta extends Entry {
  updates?: Entry[];
}

/** The meta entry a section's figures come from; undefined when results.json has no meta. */
export function entryOf(meta: Meta | undefined, section: string): Entry | undefined {
  if (!meta) return undefined;
  const update = (meta.updates ?? []).findLast((u) => u.sections?.includes(section));
  return update ?? (meta.date ? meta : undefined);
}

/** "Measured 2026-12-01 17:03 UTC, build e4959fc94698 (full; load average 4.28 / 5.36 / 4.96 at the end)." */
export function measuredLine(meta: Meta | undefined, section: string): string {
  const e = entryOf(meta, section);
  if (!e?.date) return `Measured: not recorded (results.json holds no date for ${section}).`;
  const when = `${e.date.slice(0, 16).replace('T', ' ')} UTC`;
  const load = e.loadAverage ? `; load average ${e.loadAverage.join(' / ')} at the end` : '';
  return `Measured ${when}, ${buildText(e.build)} (${e.mode ?? '?'}${load}).`;
}
