import { completionCommand } from './completion.ts';
import type { CliCommand } from './context.ts';
import { convert } from './convert.ts';
import { DEV_SPECS } from './dev-specs.ts';
import type { CommandSpec } from './flags.ts';
import { logs } from './logs.ts';
import { run } from './run.ts';
import { tick } from './schedule.ts';
import { serve } from './serve.ts';
import { silence, unsilence } from './silence.ts';
import { describe, status } from './status.ts';
import { sync } from './sync.ts';
import { handback, takeover } from './takeover.ts';
import { validate } from './validate.ts';
import { KHRUN_VERSION, version } from './version.ts';

/** The product commands that talk to a cluster: each takes kubectl's flags (flags.ts), spelled the same. */
export const CLUSTER_COMMANDS: readonly CliCommand[] = [
  run,
  status,
  describe,
  logs,
  silence,
  unsilence,
  tick,
  sync,
  serve,
  takeover,
  handback,
  convert,
];

/** `khrun completion`, made from every command's description (its own among them). */
const completion = completionCommand(() => ALL_SPECS, KHRUN_VERSION);

/** The product commands, in the order `khrun help` lists them: those that talk to a cluster, then the rest. */
export const PRODUCT_COMMANDS: readonly CliCommand[] = [...CLUSTER_COMMANDS, validate, version, completion];

/** Every command's description: the product's, then the developer commands' (bodies loaded on demand). */
export const ALL_SPECS: readonly CommandSpec[] = [...PRODUCT_COMMANDS.map((c) => c.spec), ...DEV_SPECS];
