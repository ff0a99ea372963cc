/** The environment as a plain record: lib/ never reads process.env, the entrypoint passes it in. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Parsed flags (node:util parseArgs values) or, for a Lambda handler, the event's fields. */
export type Flags = Readonly<Record<string, string | boolean | undefined>>;

/** What every options builder takes. */
export interface ConfigInput<F extends Flags = Flags> {
  flags: F;
  env: Env;
  /**
   * How a flag is named in messages: `--name` (the CLI's, the default), or `"name" in the event`;
   * undefined for a flag this entrypoint does not have (a Lambda handler has only its event's fields).
   */
  flagLabel?: (name: string) => string | undefined;
}

/** For entrypoints without flags (the Lambda handlers but runCheck): only the environment counts. */
export const NO_FLAGS = (): undefined => undefined;

/** One setting's raw text and where it came from, for the getters and their error messages. */
export interface Setting {
  /** Undefined when neither the flag nor any variable was set (an empty variable counts as unset). */
  text: string | undefined;
  /** The flag or variable the text came from; when unset, the first place it could have come from. */
  source: string;
  /** Every place it can come from, for messages: `--namespace or CHECK_NAMESPACE`. */
  places: string;
}

const cliLabel = (name: string) => `--${name}`;

/**
 * The first of the flags, then of the environment variables, that is set. An empty variable counts as
 * unset (serverless.yml writes empty strings for parameters left at their default); an empty flag does not.
 */
export function setting<F extends Flags>(
  input: ConfigInput<F>,
  names: { flags?: readonly (keyof F & string)[]; env?: readonly string[] },
): Setting {
  const label = input.flagLabel ?? cliLabel;
  const flags = (names.flags ?? []).flatMap((name) => {
    const shown = label(name);
    return shown === undefined ? [] : [{ name, shown }];
  });
  const envNames = names.env ?? [];
  const places = [...flags.slice(0, 1).map((f) => f.shown), ...envNames].join(' or ');
  for (const { name, shown } of flags) {
    const value = input.flags[name];
    if (typeof value === 'string') return { text: value, source: shown, places };
  }
  for (const name of envNames) {
    const value = input.env[name];
    if (value !== undefined && value !== '') return { text: value, source: name, places };
  }
  return { text: undefined, source: flags[0]?.shown ?? envNames[0] ?? '(none)', places };
}

/** A boolean flag (parseArgs `type: 'boolean'`): true only when given. */
export function flagSet<F extends Flags>(input: ConfigInput<F>, name: keyof F & string): boolean {
  return input.flags[name] === true;
}
