// The flags of the khrun CLI as data: the common table every command shares (kubectl's spellings), and the
// shape of one command's description. The parser (usage.ts) and each command's usage text are both made
// from these descriptions, so help and parser cannot disagree.

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
}

export type FlagTable = Readonly<Record<string, FlagSpec>>;

export interface CommandSpec {
  name: string;
  /** Positional arguments in the synopsis (`CHECK`, `up`); none when absent. */
  args?: string;
  /** The flags a usual call gives, after the arguments in the synopsis (`--check NAME`). */
  synopsis?: string;
  /** One line for `khrun help`. */
  summary: string;
  /** What the command does and its defaults, for `khrun help COMMAND`. */
  description: string;
  flags: FlagTable;
  /** The environment variables the command reads, in the order it reads them. */
  env?: readonly string[];
  /** A developer command: runs from a checkout, never from the image. */
  dev?: boolean;
}

export type CommonFlag = 'namespace' | 'all-namespaces' | 'kubeconfig' | 'context' | 'output' | 'help';

/** The flags every product command spells the same way (kubectl's). */
export const COMMON_FLAGS: Readonly<Record<CommonFlag, FlagSpec>> = {
  namespace: { type: 'string', short: 'n', value: 'NS', help: 'the namespace' },
  'all-namespaces': { type: 'boolean', short: 'A', help: 'every namespace' },
  kubeconfig: {
    type: 'string',
    value: 'PATH',
    help: 'the kubeconfig file (else KUBECONFIG, else ~/.kube/config, else in-cluster)',
  },
  context: { type: 'string', value: 'NAME', help: 'the kubeconfig context to use (else its current one)' },
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
