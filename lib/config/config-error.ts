/**
 * A flag, environment variable or event field khrun cannot run with. The CLI prints the message and where
 * the command's usage is, and exits 2; a Lambda handler fails the invocation with it. Thrown only while
 * options are built, before anything runs.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The flag (`--report-port`), variable (`KHRUN_LEASE_SECONDS`) or event field at fault. */
  readonly setting: string;
  /** The offending text as given; undefined when the setting was missing. */
  readonly value: string | undefined;
  /** What is wrong with it ("must be a positive number of seconds"). */
  readonly problem: string;
  /** What to do about it ("set a number such as 30, or unset it for the default (30)"). */
  readonly remedy: string;

  constructor(opts: { setting: string; value?: string; problem: string; remedy: string; cause?: unknown }) {
    const given = opts.value === undefined ? '' : `=${JSON.stringify(opts.value)}`;
    super(`${opts.setting}${given}: ${opts.problem}; ${opts.remedy}`, { cause: opts.cause });
    this.setting = opts.setting;
    this.value = opts.value;
    this.problem = opts.problem;
    this.remedy = opts.remedy;
  }
}
