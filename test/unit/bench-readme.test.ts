import { describe, expect, it } from 'vitest';
import { BEGIN, END, renderPerformance, replaceBetweenMarkers } from '../bench/readme-render.ts';
import { summarize } from '../bench/stats.ts';

const spawned = (samples: number[]) => ({
  entries: [{ name: 'node khrun.mjs', exitMs: summarize(samples), firstRequestMs: summarize(samples) }],
  how: 'spawned',
});

describe("docs/performance.md's generated block, rendered from results.json", () => {
  it('shows the real invocation first, labelled, and p95 only from 20 samples up', () => {
    const few = renderPerformance({ cliStart: spawned([1000, 1200, 1400]) });
    const headline = few.split('\n').find((l) => l.includes('spawn to exit')) ?? '';
    expect(headline).toMatch(/real invocation/);
    expect(headline).toContain('| 3 | 1.20 s | – | 1.00 s | 1.40 s |');
    const many = renderPerformance({ cliStart: spawned(Array.from({ length: 20 }, (_, i) => 1000 + i)) });
    expect(many.split('\n').find((l) => l.includes('spawn to exit'))).toContain('| 20 | 1.01 s | 1.02 s |');
  });

  it('labels the warm iteration as in-process and leaves out what results.json lacks', () => {
    const text = renderPerformance({ overhead: { totalMs: summarize([500, 600]) } });
    expect(text.split('\n').find((l) => l.includes('invocation to recorded outcome'))).toMatch(/in-process/);
    expect(text).not.toMatch(/Lambda cost|Scale|steady state/);
  });

  it('replaces only the text between the markers, and refuses a page without them', () => {
    const readme = `# x\n\n## Performance\n\n${BEGIN}\nold table\n${END}\n\n## Next\n`;
    const out = replaceBetweenMarkers(readme, 'new');
    expect(out).toBe(`# x\n\n## Performance\n\n${BEGIN}\nnew\n${END}\n\n## Next\n`);
    expect(() => replaceBetweenMarkers('# x\n', 'new')).toThrow(/must hold/);
    expect(() => replaceBetweenMarkers(`${BEGIN}${BEGIN}${END}`, 'new')).toThrow(/once each/);
  });

  /** A scale row of 500 checks at batch size 25, all recorded, with what a test changes. */
  const scaleRow = (o: Record<string, unknown> = {}) => ({
    checks: 500,
    batchSize: 25,
    tickMs: 3000,
    recorded: 500,
    allRecordedMs: 200_000,
    runnerJobs: 20,
    runnerPods: 20,
    checkerPods: 500,
    tickPeakRssMiB: 90,
    runnerPeakRssMiB: summarize([100, 110]),
    requests: { tick: 600, runner: 4000, perCheck: 9.2, tickByVerb: {} },
    outcomes: { Succeeded: 500 },
    ...o,
  });
  const scaleLine = (row: ReturnType<typeof scaleRow>) =>
    renderPerformance({ scale: { how: 'h', notes: [], figures: [row] } })
      .split('\n')
      .find((l) => l.startsWith(`| ${row.checks} |`)) ?? '';

  it('shows a scale row whose runners could not run every check as incomplete, with their errors', () => {
    const line = scaleLine(
      scaleRow({
        recorded: 478,
        allRecordedMs: undefined,
        lastRecordedMs: 240_000,
        runnerFailures: { 'HTTP-Code: 504': 22 },
        checkerPods: 478,
        outcomes: { Succeeded: 478 },
      }),
    );
    expect(line).toContain('478 of 500 (the last after 240.0 s)');
    expect(line).toContain('478 Succeeded, 22 not run (HTTP-Code: 504)');
  });

  it('gives no request figure when the audit log lacks the tick, and says when Jobs were deleted before the count', () => {
    const row = scaleRow({
      checks: 2000,
      runnerJobs: 73,
      runnerPods: 80,
      requests: { tick: 0, runner: 23_000, perCheck: 11.5, tickByVerb: {} },
    });
    expect(scaleLine(row)).toContain(
      "| – (audit log incomplete: 0 of the tick's requests in it, 23000 of the runners') |",
    );
    expect(scaleLine(row)).toContain('| 73 left at the end of 80 | 80 |');
    const whole = scaleRow({
      checks: 2000,
      runnerJobs: 80,
      runnerPods: 80,
      requests: { tick: 2200, runner: 23_000, perCheck: 12.6, tickByVerb: {} },
    });
    expect(scaleLine(whole)).toContain('| 12.6 (2200 + 23000) |');
    expect(scaleLine(whole)).toContain('| 80 | 80 |');
  });
});
