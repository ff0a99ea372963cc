import type { CommandSpec, CompleteKind } from './flags.ts';

// What shell completion offers, taken from the command descriptions (the same ones the parser and the
// usage are made from): the commands, each command's flags (not the hidden or old ones), the words a value
// or an argument can be, and which values are files or objects of the cluster.

export interface CompletionFlag {
  long: string;
  short?: string;
  /** A string flag: the next word is its value. */
  takesValue: boolean;
  /** Its value's name in the usage (`NS`, `FILE`). */
  valueName?: string;
  /** The words its value can be (`-o json|yaml`), when fixed. */
  values?: readonly string[];
  kind?: CompleteKind;
  repeatable: boolean;
  /** One line for the shells that show it (zsh, fish). */
  help: string;
}

export interface CompletionCommand {
  name: string;
  summary: string;
  flags: CompletionFlag[];
  /** What its positional arguments can be; absent: none are completed. */
  args?: readonly string[] | CompleteKind;
  /** It takes several (its synopsis ends with `...`). */
  manyArgs: boolean;
}

/** A value's fixed words: `values`, or a synopsis value written as lower-case words joined by | (`job|lambda`). */
function wordsOf(
  values: readonly string[] | undefined,
  value: string | undefined,
): readonly string[] | undefined {
  if (values?.length) return values;
  return value && /^[a-z]+(\|[a-z]+)+$/.test(value) ? value.split('|') : undefined;
}

/** Help text on one line, without the characters the shells' completion specs give meaning to. */
export function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

/** The commands as completion sees them, in `khrun help`'s order, then `help` (whose argument is a command). */
export function completionModel(specs: readonly CommandSpec[]): CompletionCommand[] {
  const commands: CompletionCommand[] = specs.map((spec) => ({
    name: spec.name,
    summary: oneLine(spec.summary),
    flags: Object.entries(spec.flags)
      .filter(([, f]) => !f.hidden && !f.deprecated)
      .map(([long, f]) => {
        const values = wordsOf(f.values, f.value);
        return {
          long,
          ...(f.short ? { short: f.short } : {}),
          takesValue: f.type === 'string',
          ...(f.type === 'string' ? { valueName: f.value ?? 'VALUE' } : {}),
          ...(values ? { values } : {}),
          ...(f.complete ? { kind: f.complete } : {}),
          repeatable: f.repeatable === true,
          help: oneLine(f.help),
        };
      }),
    ...(spec.completeArgs ? { args: spec.completeArgs } : {}),
    manyArgs: spec.args?.endsWith('...') === true,
  }));
  return [
    ...commands,
    {
      name: 'help',
      summary: "a command's flags, defaults and examples",
      flags: [],
      args: specs.map((s) => s.name),
      manyArgs: false,
    },
  ];
}

/** The jsonpath that prints the listed objects' names one per line, as the three scripts ask kubectl. */
export const NAMES_JSONPATH = 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}';
