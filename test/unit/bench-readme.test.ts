import { describe, expect, it } from 'vitest';
import { BEGIN, END, renderPerformance, replaceBetweenMarkers } from '../bench/readme-render.ts';
import { summarize } from '../bench/stats.ts';

const spawned = (samples: number[]) => ({
  entries: [{ name: 'node khrun.mjs', exitMs: summarize(samples), firstRequestMs: summarize(samples) }],
  how: 'spawned',
});

describe("README's Performance section, rendered from results.json", () => {
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

  it('replaces only the text between the markers, and refuses a README without them', () => {
    const readme = `# x\n\n## Performance\n\n${BEGIN}\nold table\n${END}\n\n## Next\n`;
    const out = replaceBetweenMarkers(readme, 'new');
    expect(out).toBe(`# x\n\n## Performance\n\n${BEGIN}\nnew\n${END}\n\n## Next\n`);
    expect(() => replaceBetweenMarkers('# x\n', 'new')).toThrow(/must hold/);
    expect(() => replaceBetweenMarkers(`${BEGIN}${BEGIN}${END}`, 'new')).toThrow(/once each/);
  });

  it('shows a scale row whose runners could not run every check as incomplete, with their errors', () => {
    const row = {
      checks: 500,
      batchSize: 25,
      tickMs: 3000,
      recorded: 478,
      lastRecordedMs: 240_000,
      runnerFailures: { 'HTTP-Code: 504': 22 },
      runnerJobs: 20,
      runnerPods: 20,
      checkerPods: 478,
      tickPeakRssMiB: 90,
      runnerPeakRssMiB: summarize([100, 110]),
      requests: { tick: 600, runner: 4000, perCheck: 9.2, tickByVerb: {} },
      outcomes: { Succeeded: 478 },
    };
    const text = renderPerformance({ scale: { how: 'h', notes: [], figures: [row] } });
    const line = text.split('\n').find((l) => l.startsWith('| 500 |')) ?? '';
    expect(line).toContain('478 of 500 (the last after 240.0 s)');
    expect(line).toContain('478 Succeeded, 22 not run (HTTP-Code: 504)');
  });

  it('gives no request figure when the audit log lacks the tick, and says when Jobs were deleted before the count', () => {
    const row = {
      checks: 2000,
      batchSize: 25,
      tickMs: 80_000,
      recorded: 2000,
      allRecordedMs: 1_400_000,
      runnerJobs: 73,
      runnerPods: 80,
      checkerPods: 2000,
      tickPeakRssMiB: 130,
      runnerPeakRssMiB: summarize([100, 110]),
      requests: { tick: 0, runner: 23_000, perCheck: 11.5, tickByVerb: {} },
      outcomes: { Succeeded: 2000 },
    };
    const line = (r: typeof row) =>
      renderPerformance({ scale: { how: 'h', notes: [], figures: [r] } })
        .split('\n')
        .find((l) => l.startsWith('| 2000 |')) ?? '';
    expect(line(row)).toContain(
      "| – (audit log incomplete: 0 of the tick's requests in it, 23000 of the runners') |",
    );
    expect(line(row)).toContain('| 73 left at the end of 80 | 80 |');
    const whole = { ...row, runnerJobs: 80, requests: { ...row.requests, tick: 2200, perCheck: 12.6 } };
    expect(line(whole)).toContain('| 12.6 (2200 + 23000) |');
    expect(line(whole)).toContain('| 80 | 80 |');
  });
});
