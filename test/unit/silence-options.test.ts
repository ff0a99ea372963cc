import { afterAll, describe, expect, it } from 'vitest';
import { silencePatch } from '../../lib/commands/silence.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { type SilenceFlags, silenceOptions } from '../../lib/config/silence-options.ts';
import { parseSilence } from '../../lib/notify/silence.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

const ctx = kubeconfigFile({ contextNamespace: 'team-a' });
afterAll(() => ctx.remove());

const options = (
  flags: SilenceFlags,
  positionals: string[] = ['db'],
  action: 'silence' | 'unsilence' = 'silence',
) => silenceOptions({ flags, env: { KUBECONFIG: ctx.path }, positionals, action });

function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('khrun silence and unsilence: what they take', () => {
  it('a check by name in the context namespace, or -n; a selector in -n NS,NS or -A', () => {
    const named = options({ for: '2h', reason: 'db migration' });
    expect(named).toMatchObject({
      targets: { by: 'name', name: 'db', namespace: 'team-a' },
      forMs: 2 * 3600_000,
      reason: 'db migration',
      kind: undefined,
      output: 'table',
    });
    expect(options({ for: '30m', reason: 'x', namespace: 'payments', job: true }).targets).toEqual({
      by: 'name',
      name: 'db',
      namespace: 'payments',
    });
    expect(
      options({ selector: 'team=payments', namespace: 'a,b', for: '1h', reason: 'x' }, []).targets,
    ).toEqual({ by: 'selector', selector: 'team=payments', scope: { namespaces: ['a', 'b'] } });
    expect(options({ selector: 'team=x', 'all-namespaces': true }, [], 'unsilence').targets).toEqual({
      by: 'selector',
      selector: 'team=x',
      scope: 'all',
    });
    expect(options({ selector: 'team=x' }, [], 'unsilence').targets).toMatchObject({
      scope: { namespaces: ['team-a'] },
    });
  });

  it('refuses what it cannot use, saying what to write', () => {
    expect(problem(() => options({ for: '2h', reason: 'x' }, []))).toMatch(/one check name or -l SELECTOR/);
    expect(problem(() => options({ for: '2h', reason: 'x', selector: 'a=b' }))).toMatch(/not both/);
    expect(problem(() => options({ reason: 'x' }))).toMatch(/--for/);
    expect(problem(() => options({ for: '30s', reason: 'x' }))).toMatch(/from 1m to 2160h/);
    expect(problem(() => options({ for: '2200h', reason: 'x' }))).toMatch(
      /notify\.khrun\.dev\/channels=none/,
    );
    expect(problem(() => options({ for: '2h' }))).toMatch(/--reason/);
    expect(problem(() => options({ for: '2h', reason: 'r'.repeat(201) }))).toMatch(/over 200 characters/);
    expect(problem(() => options({ for: '2h', reason: 'x', job: true, healthcheck: true }))).toMatch(
      /contradicts --healthcheck/,
    );
    // unsilence needs neither --for nor --reason.
    expect(options({}, ['db'], 'unsilence')).toMatchObject({ action: 'unsilence', forMs: 0 });
  });

  it('patches only the silence annotation: set as the runs read it, or removed', () => {
    const set = silencePatch({ untilMs: Date.UTC(2030, 0, 1), reason: 'db', by: 'alice', atMs: 0 });
    expect(Object.keys(set)).toEqual(['metadata']);
    const value = set.metadata.annotations['notify.khrun.dev/silence'] ?? '';
    expect(parseSilence(value)).toEqual({
      ok: true,
      value: { untilMs: Date.UTC(2030, 0, 1), reason: 'db', by: 'alice', atMs: 0 },
    });
    expect(silencePatch(null)).toEqual({ metadata: { annotations: { 'notify.khrun.dev/silence': null } } });
  });
});
