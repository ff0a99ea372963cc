import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SPECS } from '../../functions/cli/commands.ts';
import { completionModel } from '../../functions/cli/completion-model.ts';
import type { CliContext } from '../../functions/cli/context.ts';
import { main } from '../../functions/cli/main.ts';
import { bashComplete, ensureShell, fishComplete, zshComplete } from '../helpers/shells.ts';

// `khrun completion bash|zsh|fish`: scripts made from the commands' descriptions, checked by each shell
// itself: syntax, then what it offers for a command, a flag and a flag's value when it completes a line.
// The shells are installed from Debian when missing; a shell that cannot be had fails the test.

const run = promisify(execFile);
const khrun = resolve(import.meta.dirname, '../../functions/khrun.mjs');
const SPAWN_MS = 60_000;
const SHELL_MS = 900_000;

async function script(shell: string) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CliContext = {
    root: '/nonexistent-root',
    env: {},
    write: (l) => out.push(l),
    warn: (l) => err.push(l),
  };
  const code = await main(['completion', shell], ctx, async () => {
    throw new Error('no developer commands here');
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

let dir: string;
const paths: Record<string, string> = {};
/** A PATH with the shells and the tools they use, and no kubectl: dynamic completions then offer nothing. */
let noKubectl: NodeJS.ProcessEnv;
const TOOLS = ['bash', 'zsh', 'fish', 'sed', 'tr', 'seq', 'cat', 'sort', 'uname', 'env'];

beforeAll(async () => {
  dir = await mkdtemp('/tmp/khrun-completion-');
  await mkdir(join(dir, 'bin'));
  for (const shell of ['bash', 'zsh', 'fish'] as const) await ensureShell(shell);
  for (const tool of TOOLS) {
    const { stdout } = await run('sh', ['-c', `command -v ${tool}`]);
    await symlink(stdout.trim(), join(dir, 'bin', tool));
  }
  noKubectl = { ...process.env, PATH: join(dir, 'bin') };
  for (const shell of ['bash', 'zsh', 'fish']) {
    const { code, stdout } = await script(shell);
    expect(code).toBe(0);
    paths[shell] = join(dir, shell === 'zsh' ? '_khrun' : `khrun.${shell}`);
    await writeFile(paths[shell], `${stdout}\n`);
  }
}, SHELL_MS);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('khrun completion', () => {
  it(
    'the real process prints the bash script on stdout, nothing on stderr, exit 0',
    async () => {
      const { stdout, stderr } = await run(process.execPath, [khrun, 'completion', 'bash']);
      expect(stderr).toBe('');
      expect(stdout).toMatch(/^# bash completion for khrun /);
      expect(stdout).toContain('complete -F _khrun khrun');
    },
    SPAWN_MS,
  );

  it('an unknown or missing shell is a usage error, exit 2', async () => {
    expect(await script('powershell')).toMatchObject({
      code: 2,
      stdout: '',
      stderr: `khrun: completion takes one shell: bash, zsh, fish (not "powershell")\nSee 'khrun completion --help' for usage.`,
    });
    expect((await script('')).code).toBe(2);
  });

  it('every command and every shown flag is in each script', async () => {
    for (const shell of ['bash', 'zsh', 'fish']) {
      const { stdout } = await script(shell);
      for (const cmd of completionModel(ALL_SPECS)) {
        expect(stdout, `${shell}: ${cmd.name}`).toContain(cmd.name);
        for (const f of cmd.flags) expect(stdout, `${shell}: ${cmd.name} --${f.long}`).toContain(f.long);
      }
    }
  });
});

describe('bash', () => {
  it('is valid bash (bash -n)', async () => {
    await run('bash', ['-n', paths.bash ?? '']);
  });

  it.each([
    [['khrun', 'ru'], ['run']],
    [['khrun', 'va'], ['validate']],
    [['khrun', 'run', '--ch'], ['--check']],
    [['khrun', 'takeover', '--d'], ['--dry-run']],
    [
      ['khrun', 'run', '-o', ''],
      ['json', 'yaml'],
    ],
    [['khrun', 'status', '--output', '=', 'w'], ['wide']],
    [
      ['khrun', 'tick', '--mode', ''],
      ['job', 'lambda'],
    ],
    [
      ['khrun', 'completion', ''],
      ['bash', 'zsh', 'fish'],
    ],
    [['khrun', 'help', 'con'], ['convert']],
    [['khrun', 'run', '--report-host', ''], []],
    // Objects of the cluster come from kubectl; without it, nothing (and no error on the terminal).
    [['khrun', 'run', '--check', ''], []],
  ])('%j offers %j', async (words, expected) => {
    expect(await bashComplete(paths.bash ?? '', words, noKubectl)).toEqual(expected);
  });

  it('files for a file flag', async () => {
    expect(await bashComplete(paths.bash ?? '', ['khrun', 'validate', '-f', join(dir, 'khrun.b')])).toEqual([
      join(dir, 'khrun.bash'),
    ]);
  });
});

describe('zsh', () => {
  it(
    'is valid zsh (zsh -n) and completes a command, a flag and a value through compinit',
    async () => {
      await run('zsh', ['-n', paths.zsh ?? '']);
      const zsh = paths.zsh ?? '';
      expect(await zshComplete(zsh, 'khrun ru', noKubectl)).toEqual(['run']);
      expect(await zshComplete(zsh, 'khrun run --che', noKubectl)).toEqual(['--check']);
      expect(await zshComplete(zsh, 'khrun run -o ', noKubectl)).toEqual(['json', 'yaml']);
      expect(await zshComplete(zsh, 'khrun completion ', noKubectl)).toEqual(['bash', 'fish', 'zsh']);
    },
    SHELL_MS,
  );
});

describe('fish', () => {
  it(
    'is valid fish (fish --no-execute) and completes a command, a flag and a value',
    async () => {
      await run('fish', ['--no-execute', paths.fish ?? '']);
      const fish = paths.fish ?? '';
      expect(await fishComplete(fish, 'khrun ru', noKubectl)).toEqual(['run']);
      expect(await fishComplete(fish, 'khrun run --che', noKubectl)).toEqual(['--check']);
      expect(await fishComplete(fish, 'khrun run -o ', noKubectl)).toEqual(['json', 'yaml']);
      expect((await fishComplete(fish, 'khrun completion ', noKubectl)).sort()).toEqual([
        'bash',
        'fish',
        'zsh',
      ]);
    },
    SHELL_MS,
  );
});
