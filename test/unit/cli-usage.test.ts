import { afterAll, describe, expect, it } from 'vitest';
import { ALL_SPECS, CLUSTER_COMMANDS, PRODUCT_COMMANDS } from '../../functions/cli/commands.ts';
import type { CliContext } from '../../functions/cli/context.ts';
import { COMMON_FLAGS } from '../../functions/cli/flags.ts';
import { main } from '../../functions/cli/main.ts';
import { commandUsage, parseCommand, UsageError } from '../../functions/cli/usage.ts';
import { docPages, readPage } from '../docs/pages.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// kubectl habits: every command spells the shared flags the same way, prints its own usage for
// `khrun help COMMAND`, `COMMAND --help` and `-h` (exit 0, stdout), and names an unknown flag with one
// line saying where the command's usage is, not the usage itself (exit 2, stderr). Help and parser come
// from one description per command, so they cannot disagree. In-process: the dispatch is main(), the
// process entrypoint only wires stdout and stderr.

const plain = kubeconfigFile();
afterAll(() => plain.remove());

async function khrun(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CliContext = {
    root: '/nonexistent-root',
    env: { KUBECONFIG: '/nonexistent/kubeconfig', ...env },
    write: (line) => out.push(line),
    warn: (line) => err.push(line),
  };
  const code = await main(argv, ctx, async (command) => {
    throw new Error(`the developer module is not loaded in these tests (${command})`);
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

const usageOf = (name: string) => {
  const spec = ALL_SPECS.find((s) => s.name === name);
  if (!spec) throw new Error(`no spec ${name}`);
  return commandUsage(spec);
};

describe('help', () => {
  it.each(ALL_SPECS.map((s) => s.name))(
    '`khrun help %s`, `%s --help` and `-h` print the same usage on stdout, exit 0',
    async (name) => {
      const viaHelp = await khrun(['help', name]);
      expect(viaHelp).toEqual({ code: 0, stdout: usageOf(name), stderr: '' });
      expect(viaHelp.stdout).toMatch(new RegExp(`^usage: khrun ${name}`));
      expect(await khrun([name, '--help'])).toEqual(viaHelp);
      expect(await khrun([name, '-h'])).toEqual(viaHelp);
      // Help wins over anything else on the line, as with kubectl.
      expect(await khrun([name, '--no-such-flag', '-h'])).toEqual(viaHelp);
    },
  );

  it('`khrun help` lists every command with its summary; `help` of an unknown command is exit 2', async () => {
    const help = await khrun(['help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: khrun <command> \[flags\]/);
    for (const spec of ALL_SPECS) expect(help.stdout).toContain(`  ${spec.name.padEnd(12)}${spec.summary}`);
    expect(await khrun(['--help'])).toEqual(help);
    expect(await khrun(['-h'])).toEqual(help);
    const unknown = await khrun(['help', 'frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      `khrun: unknown command "frobnicate"\nSee 'khrun help' for the list of commands.`,
    );
    expect(unknown.stdout).toBe('');
    expect((await khrun([])).code).toBe(2);
  });
});

describe('one flag table', () => {
  it('every product command that talks to a cluster takes the common flags, spelled the same', () => {
    expect(PRODUCT_COMMANDS.filter((c) => !CLUSTER_COMMANDS.includes(c)).map((c) => c.spec.name)).toEqual([
      'validate',
      'version',
      'completion',
    ]);
    for (const { spec } of CLUSTER_COMMANDS) {
      for (const name of ['namespace', 'all-namespaces', 'kubeconfig', 'context', 'help'] as const) {
        const flag = spec.flags[name];
        expect(flag, `${spec.name} --${name}`).toBeDefined();
        expect(flag?.type).toBe(COMMON_FLAGS[name].type);
        expect(flag?.short).toBe(COMMON_FLAGS[name].short);
      }
      if (spec.flags.output) expect(spec.flags.output.short).toBe('o');
    }
  });

  it('-o is offered where output is printed, with the values each command prints', () => {
    const outputs = Object.fromEntries(
      PRODUCT_COMMANDS.map(({ spec }) => [spec.name, spec.flags.output?.values ?? null]),
    );
    expect(outputs).toEqual({
      run: ['json', 'yaml'],
      status: ['json', 'yaml', 'wide'],
      describe: null,
      logs: null,
      silence: ['json', 'yaml'],
      unsilence: ['json', 'yaml'],
      tick: ['json', 'yaml'],
      sync: ['yaml', 'json'],
      serve: null,
      takeover: ['json', 'yaml'],
      handback: ['json', 'yaml'],
      convert: ['json', 'yaml'],
      validate: ['json', 'yaml'],
      version: ['json', 'yaml'],
      completion: null,
    });
  });

  it.each(ALL_SPECS.map((s) => s.name))(
    '%s: every flag its usage shows is one its parser accepts',
    (name) => {
      const spec = ALL_SPECS.find((s) => s.name === name)!;
      const usage = commandUsage(spec);
      for (const [flag, f] of Object.entries(spec.flags)) {
        if (f.hidden || f.deprecated) {
          expect(usage, `--${flag} is not shown`).not.toMatch(new RegExp(`--${flag}\\b`));
        } else {
          expect(usage).toContain(`--${flag}`);
          if (f.short) expect(usage).toContain(`-${f.short}, --${flag}`);
        }
        const value = f.values?.[0] ?? 'x';
        const parsed = parseCommand(spec, f.type === 'string' ? [`--${flag}`, value] : [`--${flag}`]);
        if (flag === 'help') expect(parsed.kind).toBe('help');
        else
          expect(parsed).toMatchObject({
            kind: 'args',
            values: { [flag]: f.type === 'string' ? value : true },
          });
      }
    },
  );
});

describe('usage errors name themselves and the command', () => {
  it('an unknown flag: `khrun: unknown flag --foo for "run"` and where the usage is on stderr, exit 2', async () => {
    const result = await khrun(['run', '--check', 'c', '--foo']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`khrun: unknown flag --foo for "run"\nSee 'khrun run --help' for usage.`);
    expect(result.stderr).not.toContain(usageOf('run').split('\n')[0]);
    expect((await khrun(['status', '-x'])).stderr).toBe(
      `khrun: unknown flag -x for "status"\nSee 'khrun status --help' for usage.`,
    );
    expect((await khrun(['serve', '-o', 'json'])).stderr).toMatch(/^khrun: unknown flag -o for "serve"/);
  });

  it('a flag without its value, a value for a switch, an argument a command does not take', () => {
    const run = ALL_SPECS.find((s) => s.name === 'run')!;
    const sync = ALL_SPECS.find((s) => s.name === 'sync')!;
    expect(() => parseCommand(run, ['-n'])).toThrow(
      new UsageError('flag -n/--namespace needs a value (NS)', 'run'),
    );
    expect(() => parseCommand(sync, ['--dry-run=yes'])).toThrow('flag --dry-run takes no value');
    expect(() => parseCommand(run, ['extra'])).toThrow('unexpected argument "extra" for "run"');
  });

  it('a bad value is a ConfigError printed with where the command’s usage is, not the usage', async () => {
    const result = await khrun(['status', '-o', 'table2']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `khrun: --output="table2": must be table, wide, json or yaml; the default is table\n` +
        "See 'khrun status --help' for usage.",
    );
    expect(result.stderr).not.toContain('usage: khrun status');
  });

  it.each([
    [['run', '--check', 'c', '-n', 'a,b'], /^khrun: --namespace="a,b": a run is one check in one namespace/],
    [
      ['run', '--check', 'c', '-A'],
      /^khrun: --all-namespaces: a run is one check in one namespace; give -n NS/,
    ],
    [['describe', 'c', '-A'], /^khrun: --all-namespaces: describe shows one check in one namespace/],
    [
      ['describe', 'c', '--namespace=a,b'],
      /^khrun: --namespace="a,b": describe shows one check in one namespace/,
    ],
    [['status', '-n', 'a', '-A'], /^khrun: --all-namespaces: contradicts --namespace="a"/],
    [['tick', '-A', '--namespace', 'a'], /^khrun: --all-namespaces: contradicts --namespace="a"/],
  ])('khrun %j exits 2: %s', async (argv, message) => {
    const result = await khrun(argv, { KUBECONFIG: plain.path, KHRUN_REPORT_HOST: '10.0.0.1' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});

describe('old spellings keep working for one release, with a warning', () => {
  it.each([
    [['tick', '--namespaces', 'a,b'], 'khrun: --namespaces is deprecated; use -n/--namespace a,b'],
    [['sync', '--namespaces=a'], 'khrun: --namespaces is deprecated; use -n/--namespace a'],
    [
      ['serve', '--namespaces', 'a', '--port', 'x'],
      'khrun: --namespaces is deprecated; use -n/--namespace a',
    ],
    [['tick', '--job-namespace', 'k'], 'khrun: --job-namespace is deprecated; use --runner-namespace k'],
    [
      ['sync', '--template-namespace', 'k'],
      'khrun: --template-namespace is deprecated; use --runner-namespace k',
    ],
  ])('khrun %j warns once on stderr and goes on', async (argv, warning) => {
    // The nonexistent kubeconfig stops the command after the warning, before anything runs.
    const result = await khrun(argv);
    const lines = result.stderr.split('\n');
    expect(lines[0]).toBe(warning);
    expect(lines.filter((l) => l.includes('deprecated'))).toHaveLength(1);
    expect(lines[1]).toMatch(/^khrun: (KUBECONFIG|--port)/);
  });
});

describe('the README and docs/ spell every command as the parser accepts it', () => {
  // docs/reference/cli.md is rendered from the same descriptions (test/docs/cli-reference.ts); its
  // synopses (`--check NAME | --job NAME`) are alternatives, not one command line. The generated blocks
  // (bench, compat, faults) say how figures were measured, in prose that may start with a command's name.
  const readme = docPages()
    .filter((page) => page !== 'docs/reference/cli.md')
    .map((page) =>
      readPage(page)
        .replace(/<!-- ([\w-]+):begin[\s\S]*?<!-- \1:end -->/g, '')
        // What a command prints (```text blocks) is output, not a command line.
        .replace(/```text\n[\s\S]*?```/g, ''),
    )
    .join('\n');
  const names = ALL_SPECS.map((s) => s.name).join('|');
  // A command line: `khrun NAME ...` (or `npx khrun`) opening a code line or an inline code span (not
  // prose, nor a shell comment), up to the end of the span, the line or a comment; [optional] groups and
  // a|b alternatives are taken as written, all of them at once (the parser only checks spelling).
  const commandLine = new RegExp(`(?:^|\`)[ \\t]*(?:npx )?khrun (${names})\\b([^\`\\n#]*)`, 'gm');
  const lines = [...readme.matchAll(commandLine)].map((m) => ({
    name: m[1] ?? '',
    // A shell pipe into another program (`| jq ...`, not `| --job NAME` alternatives) ends the command;
    // redirections (`2>run.log`) are the shell's.
    args: (m[2] ?? '')
      .split(/\s\|\s+(?=[a-z])/)[0]!
      .replace(/[[\]]/g, '')
      .split(/\s+/)
      .filter((t) => t !== '' && t !== '|' && !t.startsWith('$(') && !t.startsWith('(') && !/^\d?>/.test(t)),
  }));

  it('finds the command lines', () => {
    expect(lines.length).toBeGreaterThan(20);
  });

  it.each(lines.map((l) => [`khrun ${l.name} ${l.args.join(' ')}`.trim(), l]))('%s', (_, line) => {
    const spec = ALL_SPECS.find((s) => s.name === line.name)!;
    expect(() => parseCommand(spec, line.args)).not.toThrow();
    expect(parseCommand(spec, line.args)).not.toMatchObject({ warnings: [expect.anything()] });
  });
});
