import { describe, expect, it } from 'vitest';
import { nextMeta } from '../bench/results-file.ts';

const sections = ['overhead', 'fleet', 'scale'] as const;
const before = {
  date: '2026-11-30T21:16:16.049Z',
  mode: 'full',
  updates: [
    { sections: ['fleet'], date: '2026-12-01T10:00:00Z' },
    { sections: ['scale', 'overhead'], date: '2026-12-02T10:00:00Z' },
  ],
};
const env = { date: '2026-12-04T00:00:00Z', mode: 'full' };

describe('nextMeta: what the results say was measured when', () => {
  it('a full run replaces everything', () => {
    expect(nextMeta({ measured: [], metaBefore: before, environment: env, sections })).toEqual(env);
  });

  it('a partial run adds its entry and drops the entries it covers whole', () => {
    const meta = nextMeta({
      only: ['fleet'],
      measured: ['fleet'],
      metaBefore: before,
      environment: env,
      sections,
    });
    expect(meta).toEqual({
      ...before,
      updates: [before.updates[1], { sections: ['fleet'], ...env }],
    });
  });

  it('keeps an entry that still covers a section it did not measure', () => {
    const meta = nextMeta({
      only: ['scale'],
      measured: ['scale'],
      metaBefore: before,
      environment: env,
      sections,
    });
    expect(meta).toMatchObject({ updates: [before.updates[0], before.updates[1], { sections: ['scale'] }] });
  });

  it('a partial run that measured every section is a full run: nothing of the earlier runs is left', () => {
    const all = [...sections];
    expect(nextMeta({ only: all, measured: all, metaBefore: before, environment: env, sections })).toEqual(
      env,
    );
  });

  it('one whose section failed keeps the earlier entry for that section', () => {
    const meta = nextMeta({
      only: [...sections],
      measured: ['overhead', 'fleet'],
      metaBefore: before,
      environment: env,
      sections,
    });
    expect(meta).toMatchObject({
      date: before.date,
      updates: [before.updates[1], { sections: ['overhead', 'fleet'] }],
    });
  });

  it('measuring nothing changes nothing', () => {
    expect(nextMeta({ only: ['fleet'], measured: [], metaBefore: before, environment: env, sections })).toBe(
      before,
    );
  });
});
