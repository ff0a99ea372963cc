import { parseArgs } from 'node:util';
import { COMMON_FLAGS, type CommandSpec, type FlagSpec, flagName } from './flags.ts';

/** A mistake on the command line (an unknown flag, a missing value): exit 2, pointing at the command's usage. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    /** The command whose usage the message points at (`khrun COMMAND --help`). */
    readonly command: string,
  ) {
    super(message);
  }
}

/** What a command body gets: the flags by long name, and the positional arguments. */
export interface ParsedArgs {
  values: Readonly<Record<string, string | boolean | undefined>>;
  positionals: readonly string[];
  /** Every value of each string flag, in order, for a flag given more than once (`convert -f A -f B`). */
  repeated?: Readonly<Record<string, readonly string[]>>;
}

export type Parsed = { kind: 'help' } | ({ kind: 'args'; warnings: string[] } & ParsedArgs);

/**
 * The command line of one command, by its description: -h/--help anywhere means help; an unknown flag, a
 * string flag without its value, a value given to a switch or an argument the command does not take is a
 * UsageError naming it; an old spelling is parsed as before and adds one warning.
 */
export function parseCommand(spec: CommandSpec, args: readonly string[]): Parsed {
  const options = Object.fromEntries(
    Object.entries(spec.flags).map(([name, f]) => [
      name,
      f.short ? { type: f.type, short: f.short } : { type: f.type },
    ]),
  );
  // strict: false, so that the errors below can name the flag and the command in khrun's words.
  const { values, positionals, tokens } = parseArgs({
    args: [...args],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const fail = (message: string) => new UsageError(message, spec.name);
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help')) return { kind: 'help' };
  const warnings: string[] = [];
  const warned = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const flag = Object.hasOwn(spec.flags, token.name) ? spec.flags[token.name] : undefined;
    if (!flag) throw fail(`unknown flag ${token.rawName} for "${spec.name}"`);
    const shown = flagName(token.name, flag);
    if (flag.type === 'boolean' && token.value !== undefined) throw fail(`flag ${shown} takes no value`);
    // As node's strict mode: `-n -A` is a forgotten value, not the namespace "-A"; `-` alone is stdin.
    if (
      flag.type === 'string' &&
      (token.value === undefined ||
        (!token.inlineValue && token.value.startsWith('-') && token.value !== '-'))
    )
      throw fail(`flag ${shown} needs a value (${flag.value ?? 'VALUE'})`);
    if (flag.deprecated && !warned.has(token.name)) {
      warned.add(token.name);
      const use = flag.deprecated.use;
      warnings.push(
        `${token.rawName} is deprecated; use ${flagName(use, spec.flags[use])}${token.value ? ` ${token.value}` : ''}`,
      );
    }
  }
  if (!spec.args && positionals.length > 0)
    throw fail(`unexpected argument "${positionals[0]}" for "${spec.name}"`);
  const repeated: Record<string, string[]> = {};
  for (const token of tokens) {
    if (token.kind !== 'option' || typeof token.value !== 'string') continue;
    repeated[token.name] = [...(repeated[token.name] ?? []), token.value];
  }
  return { kind: 'args', values, positionals, warnings, repeated };
}

const WIDTH = 100;

/** The words of text in lines of at most `width` characters, joined with `indent` after each break. */
function wrap(text: string, width: number, indent = ''): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join(`\n${indent}`);
}

function flagColumn(name: string, f: FlagSpec): string {
  const value = f.type === 'string' ? ` ${f.value ?? 'VALUE'}` : '';
  return `${f.short ? `-${f.short}, ` : '    '}--${name}${value}`;
}

/**
 * `khrun help COMMAND`: synopsis, description, the flags it parses (but hidden and old ones), environment,
 * then the examples (last, as kubectl prints them).
 */
export function commandUsage(spec: CommandSpec): string {
  // The command's own flags first, then the common ones in the shared table's order, -h last.
  const rank = (name: string) => (name === 'help' ? 2 : Object.hasOwn(COMMON_FLAGS, name) ? 1 : 0);
  const shown = Object.entries(spec.flags)
    .filter(([, f]) => !f.hidden && !f.deprecated)
    .sort(([a], [b]) => rank(a) - rank(b));
  const columns = shown.map(([name, f]) => flagColumn(name, f));
  const pad = Math.max(...columns.map((c) => c.length)) + 3;
  const out = [
    `usage: khrun ${[spec.name, spec.args, spec.synopsis, '[flags]'].filter(Boolean).join(' ')}`,
    '',
    wrap(spec.description, WIDTH),
    '',
    'flags:',
    ...shown.map(
      ([, f], i) =>
        `  ${(columns[i] ?? '').padEnd(pad)}${wrap(f.help, WIDTH - pad - 2, ' '.repeat(pad + 2))}`,
    ),
  ];
  if (spec.env?.length)
    out.push('', wrap(`environment (a flag wins over its variable): ${spec.env.join(', ')}`, WIDTH));
  if (spec.dev)
    out.push('', 'A developer command: it runs from a khrun checkout (npx khrun), not from the image.');
  out.push('', 'examples:', ...spec.examples.flatMap((e) => [`  # ${e.what}`, `  ${e.line}`]));
  return out.join('\n');
}

/** `khrun help`: every command with its summary, and the flags they share. */
export function overview(specs: readonly CommandSpec[]): string {
  const common = (['namespace', 'all-namespaces', 'kubeconfig', 'context', 'output'] as const)
    .map((name) => flagName(name, COMMON_FLAGS[name]))
    .join(', ');
  return [
    'usage: khrun <command> [flags]',
    '',
    'commands:',
    ...specs.map((s) => `  ${s.name.padEnd(12)}${s.summary}`),
    '',
    wrap(
      `The commands that talk to a cluster take kubectl's flags, spelled the same in each: ${common}. ` +
        "`khrun help COMMAND`, `khrun COMMAND --help` or `-h` print a command's flags and defaults. " +
        '(dev) commands run from a checkout (npx khrun), not from the image.',
      WIDTH,
    ),
  ].join('\n');
}
