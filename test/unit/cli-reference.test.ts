import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALL_SPECS } from '../../functions/cli/commands.ts';
import type { CommandSpec } from '../../functions/cli/flags.ts';
import { CLI_REFERENCE_COMMAND, CLI_REFERENCE_PATH, renderCliReference } from '../docs/cli-reference.ts';

describe('docs/reference/cli.md, generated from the command descriptions', () => {
  it(`is current (else run ${CLI_REFERENCE_COMMAND})`, () => {
    const committed = readFileSync(CLI_REFERENCE_PATH, 'utf8');
    expect(committed, `docs/reference/cli.md is stale: run ${CLI_REFERENCE_COMMAND}`).toBe(
      renderCliReference(ALL_SPECS),
    );
  });

  it.each(ALL_SPECS.map((s) => [s.name, s] as const))(
    'documents every flag of %s that help shows',
    (_, spec) => {
      const text = renderCliReference(ALL_SPECS);
      const section = text.slice(text.indexOf(`## khrun ${spec.name}\n`)).split('\n## ')[0] ?? '';
      expect(section).toContain(spec.summary);
      for (const [name, f] of Object.entries(spec.flags)) {
        if (f.hidden || f.deprecated) continue;
        expect(section).toContain(`\`--${name}\``);
      }
      for (const v of spec.env ?? []) expect(section).toContain(`\`${v}\``);
    },
  );

  it('follows a change to a description: a new flag and an old spelling show up', () => {
    const [first, ...rest] = ALL_SPECS as [CommandSpec, ...CommandSpec[]];
    const changed: CommandSpec = {
      ...first,
      flags: {
        ...first.flags,
        'brand-new': { type: 'string', value: 'N', help: 'a flag | with a pipe and <angle>' },
        'old-name': { type: 'string', help: 'old', deprecated: { use: 'brand-new' } },
      },
    };
    const text = renderCliReference([changed, ...rest]);
    expect(text).not.toBe(renderCliReference(ALL_SPECS));
    expect(text).toContain('| `--brand-new` | `N` | a flag \\| with a pipe and &lt;angle&gt; |');
    expect(text).toContain('`--old-name` (now `--brand-new`)');
  });
});
