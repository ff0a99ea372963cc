import { describe, expect, it } from 'vitest';
import { ALL_SPECS } from '../../functions/cli/commands.ts';
import type { CommandSpec } from '../../functions/cli/flags.ts';
import { commandUsage, parseCommand } from '../../functions/cli/usage.ts';

// Every command's help ends with an Examples block taken from its description, and every example is a
// command line its own parser accepts: help and parser cannot drift apart.

/**
 * The khrun words of an example line as a shell would split them: single and double quotes, backslash;
 * the command starts at `khrun` (after an input pipe or a `<(`) and ends at the first unquoted `|`, `>`,
 * `)` or `;`.
 */
function khrunArgv(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | undefined;
  let started = false;
  const end = () => {
    if (word !== '') words.push(word);
    word = '';
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i] ?? '';
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"') word += line[++i] ?? '';
      else word += c;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '\\') word += line[++i] ?? '';
    else if (/\s/.test(c)) end();
    else if ('|>);'.includes(c) || (c === '<' && line[i + 1] === '(')) {
      end();
      if (started) break;
      words.length = 0;
      if (c === '<') i++;
    } else {
      word += c;
      if (word === 'khrun' && words.length === 0) started = true;
    }
  }
  if (quote) throw new Error(`unclosed ${quote} in ${line}`);
  end();
  if (words[0] !== 'khrun') throw new Error(`no khrun command in ${line}`);
  return words.slice(1);
}

const cases = ALL_SPECS.flatMap((spec) => spec.examples.map((e) => [spec.name, e.line, spec] as const));

describe('examples', () => {
  it.each(ALL_SPECS.map((s) => [s.name, s] as const))('%s has at least one, each explained', (_, spec) => {
    expect(spec.examples.length).toBeGreaterThan(0);
    for (const e of spec.examples) expect(e.what.trim()).not.toBe('');
  });

  it.each(cases)(
    '%s: `%s` parses with the command’s own parser, no warning',
    (name, line, spec: CommandSpec) => {
      const [command, ...args] = khrunArgv(line);
      expect(command).toBe(name);
      const parsed = parseCommand(spec, args);
      expect(parsed).toMatchObject({ kind: 'args', warnings: [] });
    },
  );

  it.each(ALL_SPECS.map((s) => [s.name, s] as const))(
    '`khrun help %s` ends with them, each under a # line saying what it does',
    (_, spec) => {
      const usage = commandUsage(spec);
      const block = usage.slice(usage.lastIndexOf('\nexamples:\n') + 1).split('\n');
      expect(block[0]).toBe('examples:');
      expect(block.slice(1)).toEqual(spec.examples.flatMap((e) => [`  # ${e.what}`, `  ${e.line}`]));
    },
  );

  it('the splitter takes the khrun command out of a pipeline or a process substitution', () => {
    expect(khrunArgv("kubectl kustomize x | khrun sync --dry-run -f - | grep 'a b'")).toEqual([
      'sync',
      '--dry-run',
      '-f',
      '-',
    ]);
    expect(khrunArgv('source <(khrun completion bash)')).toEqual(['completion', 'bash']);
    expect(khrunArgv(`khrun run --check "a b" -o 'json'`)).toEqual(['run', '--check', 'a b', '-o', 'json']);
    expect(() => khrunArgv('kubectl get pods')).toThrow('no khrun command');
  });
});
