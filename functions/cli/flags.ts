// The flags of the khrun CLI as data: the common table every command shares (kubectl's spellings), and the
// shape of one command's description. The parser (usage.ts) and each command's usage text are both made
// from these descriptions, so help and parser cannot disagree.

/**
 * What a value can be, for shell completion (`khrun completion`): a file or directory, or objects of the
 * cluster the line talks to (listed with kubectl, honouring the --kubeconfig, --context and -n typed).
 */
export type CompleteKind =
  | 'file'
  | 'directory'
  | 'namespace'
  | 'context'
  | 'khchecks'
  | 'khjobs'
  | 'healthchecks';

export interface FlagSpec {
  type: 'string' | 'boolean';
  /** One letter: `-n`. */
  short?: string;
  /** The value's name in the usage: `NS`, `PATH`. */
  value?: string;
  /** The words the value may be (shown in the usage; lib/config checks them). */
  values?: readonly string[];
  help: string;
  /** Parsed but not shown: a flag that is only there to be refused with a clear reason (`run -A`). */
  hidden?: boolean;
  /** An old spelling: parsed, not shown, warned about once on stderr. `use` is the flag that replaces it. */
  deprecated?: { use: string };
  /** What its value can be, for shell completion; absent: a free value (or `values`). */
  complete?: CompleteKind;
  /** May be given more than once (`-f A -f B`). */
  repeatable?: boolean;
}

export type FlagTable = Readonly<Record<string, FlagSpec>>;

/** One example of a command's use: the command line as typed, and what it does (a `#` line above it). */
export interface Example {
  /** `khrun NAME ...`, optionally after `... |` (its input) or before `| ...`; it parses with the command's flags. */
  line: string;
  what: string;
}

export interface CommandSpec {
  name: string;
  /** Positional arguments in the synopsis (`CHECK`, `up`); none when absent. */
  args?: string;
  /** What the positional arguments can be, for shell completion: fixed words, or objects of the cluster. */
  completeArgs?: readonly string[] | CompleteKind;
  /** The flags a usual call gives, after the arguments in the synopsis (`--check NAME`). */
  synopsis?: string;
  /** One line for `khrun help`. */
  summary: string;
  /** What the command does and its defaults, for `khrun help COMMAND`. */
  description: string;
  flags: FlagTable;
  /** The environment variables the command reads, in the order it reads them. */
  env?: readonly string[];
  /** How it is used, at least one: the Examples block of its help (each parses with these flags). */
  examples: readonly [Example, ...Example[]];
  /** A developer command: runs from a checkout, never from the image. */
  dev?: boolean;
}

export type CommonFlag = 'namespace' | 'all-namespaces' | 'kubeconfig' | 'context' | 'output' | 'help';

/** The flags every product command spells the same way (kubectl's). */
export const COMMON_FLAGS: Readonly<Record<CommonFlag, FlagSpec>> = {
  namespace: { type: 'string', short: 'n', value: 'NS', help: 'the namespace', complete: 'namespace' },
  'all-namespaces': { type: 'boolean', short: 'A', help: 'every namespace' },
  kubeconfig: {
    type: 'string',
    value: 'PATH',
    complete: 'file',
    help: 'the kubeconfig file (else KUBECONFIG, else ~/.kube/config, else in-cluster)',
  },
  context: {
    type: 'string',
    value: 'NAME',
    help: 'the kubeconfig context to use (else its current one)',
    complete: 'context',
  },
  output: { type: 'string', short: 'o', value: 'FORMAT', help: 'the output format' },
  help: { type: 'boolean', short: 'h', help: 'print this usage' },
};

const HELP: FlagTable = { help: COMMON_FLAGS.help };

/**
 * The common flags for a command. `namespaces`: `one` (run, describe: one check, so -n takes one namespace
 * and -A is refused), or `list` (-n A,B or -A for all); `all`: what neither means for this command.
 * `output`: the -o values, first the default's alternatives as the command prints them; none: no -o (the
 * command prints nothing to format).
 */
export function commonFlags(opts: {
  namespaces:
    | { kind: 'one'; help: string; refuseAll: string }
    | { kind: 'list'; help: string; allHelp: string };
  output?: { values: readonly string[]; help: string };
}): FlagTable {
  const ns = opts.namespaces;
  const flags: Record<string, FlagSpec> = {
    namespace: { ...COMMON_FLAGS.namespace, value: ns.kind === 'one' ? 'NS' : 'NS[,NS]', help: ns.help },
    'all-namespaces':
      ns.kind === 'one'
        ? { ...COMMON_FLAGS['all-namespaces'], help: ns.refuseAll, hidden: true }
        : { ...COMMON_FLAGS['all-namespaces'], help: ns.allHelp },
    kubeconfig: COMMON_FLAGS.kubeconfig,
    context: COMMON_FLAGS.context,
  };
  if (opts.output) {
    flags.output = {
      ...COMMON_FLAGS.output,
      value: opts.output.values.join('|'),
      values: opts.output.values,
      help: opts.output.help,
    };
  }
  return { ...flags, ...HELP };
}

/** Only -h/--help: the developer commands, which talk to no existing cluster. */
export const HELP_ONLY: FlagTable = HELP;

/** `--namespaces A,B`, the old spelling of tick, sync and serve (warned about until the next release). */
export const OLD_NAMESPACES: FlagTable = {
  namespaces: { type: 'string', value: 'NS[,NS]', help: 'old spelling', deprecated: { use: 'namespace' } },
};

/** How a flag is written in messages: `-n/--namespace`, `--kubeconfig`. */
export function flagName(name: string, spec: Pick<FlagSpec, 'short'> | undefined): string {
  return spec?.short ? `-${spec.short}/--${name}` : `--${name}`;
}
