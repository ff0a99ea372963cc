import { EXIT } from '../../lib/core/exit-codes.ts';
import { bashScript } from './completion-bash.ts';
import { fishScript } from './completion-fish.ts';
import { completionModel } from './completion-model.ts';
import { zshScript } from './completion-zsh.ts';
import type { CliCommand } from './context.ts';
import { type CommandSpec, HELP_ONLY } from './flags.ts';
import { UsageError } from './usage.ts';

export const SHELLS = { bash: bashScript, zsh: zshScript, fish: fishScript } as const;
export type Shell = keyof typeof SHELLS;

/**
 * `khrun completion bash|zsh|fish`, over the descriptions `specs()` returns (every command's, this one's
 * included: commands.ts passes them late, as it lists this command among them).
 */
export function completionCommand(specs: () => readonly CommandSpec[], version: string): CliCommand {
  return {
    spec: {
      name: 'completion',
      args: 'bash|zsh|fish',
      completeArgs: Object.keys(SHELLS),
      summary: 'the shell completion script for bash, zsh or fish',
      description:
        "Prints a completion script made from the commands' own descriptions: commands, each command's " +
        'flags, the words a value can be (-o json|yaml), files for file flags, and namespaces, kubeconfig ' +
        'contexts, khchecks, khjobs and HealthChecks from the cluster the line names (--kubeconfig, ' +
        '--context, -n), listed with kubectl when it is installed (5 s at most, nothing when it fails).',
      examples: [
        { what: 'completion in the current bash', line: 'source <(khrun completion bash)' },
        {
          what: 'for every bash session (the bash-completion package loads it)',
          line: 'khrun completion bash > /etc/bash_completion.d/khrun',
        },
        {
          what: 'zsh: as a function in a directory of $fpath (here ~/.zfunc, listed in fpath before compinit)',
          line: 'khrun completion zsh > ~/.zfunc/_khrun',
        },
        { what: 'fish', line: 'khrun completion fish > ~/.config/fish/completions/khrun.fish' },
      ],
      flags: HELP_ONLY,
    },
    async run({ positionals }, ctx) {
      const [shell, ...rest] = positionals;
      if (shell === undefined || !Object.hasOwn(SHELLS, shell) || rest.length > 0)
        throw new UsageError(
          `completion takes one shell: ${Object.keys(SHELLS).join(', ')}${shell === undefined ? '' : ` (not ${JSON.stringify(positionals.join(' '))})`}`,
          'completion',
        );
      ctx.write(SHELLS[shell as Shell](completionModel(specs()), version).trimEnd());
      return EXIT.ok;
    },
  };
}
