import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const found = (shell: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${shell}`], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
};

/**
 * The shell, installed from Debian when missing (as root: apt-get install -y, after apt-get update when
 * the package lists are empty); else an error that says what to install. Never a silent skip.
 */
export async function ensureShell(shell: 'bash' | 'zsh' | 'fish'): Promise<string> {
  if (found(shell)) return shell;
  const how = `apt-get install -y ${shell} (as root)`;
  if (process.getuid?.() !== 0)
    throw new Error(`${shell} is not installed and this test is not root to install it: run ${how}`);
  const install = () =>
    run('apt-get', ['install', '-y', '--no-install-recommends', shell], { timeout: 600_000 });
  try {
    await install().catch(async () => {
      await run('apt-get', ['update'], { timeout: 600_000 });
      await install();
    });
  } catch (error) {
    throw new Error(`${shell} is not installed and ${how} failed: ${(error as Error).message}`);
  }
  if (!found(shell)) throw new Error(`${shell} is still missing after ${how}`);
  return shell;
}

/** Runs fn with a temporary directory, removed afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'khrun-shell-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * What bash's completion function offers for a command line: the script is sourced in a bash subprocess,
 * COMP_WORDS and COMP_CWORD set as bash sets them (the line split at spaces and at `=`), _khrun called, and
 * COMPREPLY printed one per line. The last word may be empty: completing after a space.
 */
export async function bashComplete(
  scriptPath: string,
  words: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  const quoted = words.map((w) => `'${w.replace(/'/g, "'\\''")}'`).join(' ');
  const program = `source ${scriptPath}; COMP_WORDS=(${quoted}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _khrun; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const { stdout } = await run('bash', ['--norc', '--noprofile', '-c', program], { env, timeout: 30_000 });
  return stdout.split('\n').filter(Boolean);
}

/** What fish offers for a command line (`complete -C`), the candidates without their descriptions. */
export async function fishComplete(scriptPath: string, line: string, env: NodeJS.ProcessEnv = process.env) {
  const { stdout } = await run(
    'fish',
    ['--no-config', '-c', `source ${scriptPath}; complete -C ${JSON.stringify(line).replace(/\$/g, '\\$')}`],
    { env, timeout: 30_000 },
  );
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t')[0] ?? '');
}

/**
 * What zsh's completion system offers for a command line: an interactive zsh in a pseudo-terminal (zpty)
 * runs compinit, loads the script, and a widget bound to ^T completes the line, printing every match
 * compadd receives between markers. The candidates are returned sorted and without duplicates.
 */
export async function zshComplete(scriptPath: string, line: string, env: NodeJS.ProcessEnv = process.env) {
  return withTempDir(async (dir) => {
    const driver = join(dir, 'complete.zsh');
    await writeFile(
      driver,
      [
        'zmodload zsh/zpty',
        "zpty z 'zsh -f -i'",
        `zpty -w z 'PROMPT="> "; autoload -U compinit; compinit -u -D; source ${scriptPath}; _cap() { print -r -- "<<<"; compadd() { local -a m; builtin compadd -O m "$@"; print -rl -- "\${m[@]}"; builtin compadd "$@" }; _main_complete; unfunction compadd; print -r -- ">>>" }; zle -C cap-complete complete-word _cap; bindkey "^T" cap-complete; print READY'`,
        "zpty -r -m z out '*READY*'",
        `zpty -w -n z ${JSON.stringify(line).replace(/\$/g, '\\$')}$'\\x14'`,
        "zpty -r -m z out '*>>>*'",
        "print -r -- \"$out\" | tr -d '\\r' | sed -n '/<<</,/>>>/p'",
        'zpty -d z',
      ].join('\n'),
    );
    const { stdout } = await run('zsh', ['-f', driver], { env, timeout: 30_000 });
    const lines = stdout.split('\n');
    const from = lines.findIndex((l) => l.endsWith('<<<'));
    const to = lines.indexOf('>>>');
    if (from < 0 || to < 0) throw new Error(`zsh printed no completion block:\n${stdout}`);
    return [...new Set(lines.slice(from + 1, to).filter(Boolean))].sort();
  });
}
