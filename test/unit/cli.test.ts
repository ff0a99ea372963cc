import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { CliContext } from '../../functions/cli/context.ts';
import { main } from '../../functions/cli/main.ts';

const run = promisify(execFile);
const khrun = resolve(import.meta.dirname, '../../functions/khrun.mjs');
// Each spawn starts the CLI through tsx: on a loaded 2-core CI machine that takes several seconds, past
// vitest's default 5 s, and a timeout there is a false failure.
const SPAWNS_MS = 60_000;

/** The real process: stdout and stderr apart, and the exit code. */
async function spawnCli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [khrun, ...args], {
      env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The same dispatch in this process (fast): the developer module is imported as the CLI would. */
async function cli(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const ctx: CliContext = {
    root: resolve(import.meta.dirname, '../..'),
    env: { KUBECONFIG: '/nonexistent/kubeconfig', ...env },
    write: (line) => out.push(line),
    warn: (line) => out.push(line),
  };
  const code = await main(argv, ctx, async (command) => {
    const { devCommands } = await import('../../functions/cli/dev.ts');
    const body = devCommands[command];
    if (!body) throw new Error(`no developer command ${command}`);
    return body;
  });
  return { code, out: out.join('\n') };
}

// Usage and configuration mistakes are exit 2 with a message that names the flag or variable and says
// what to do, then one line saying where the usage is (not the usage itself); nothing runs.
describe('khrun CLI usage errors', () => {
  it.each([
    [['frobnicate'], {}, /unknown command "frobnicate"/, "See 'khrun help' for the list of commands."],
    [['run', '--bogus'], {}, /^khrun: unknown flag --bogus for "run"$/m, "See 'khrun run --help' for usage."],
    [
      ['run'],
      {},
      /khrun: --check: the name of the khcheck to run is required; give --check or CHECK_NAME/,
      "See 'khrun run --help' for usage.",
    ],
    [
      ['run', '--check', 'x', '-o', 'wide'],
      {},
      /--output="wide": must be text, json or yaml/,
      "See 'khrun run --help' for usage.",
    ],
    [
      ['run', '--check', 'x', '--report-port', '70000'],
      {},
      /--report-port="70000": must be a TCP port number/,
      "See 'khrun run --help' for usage.",
    ],
    [
      ['run', '--check', 'x'],
      { KHRUN_LEASE_SECONDS: 'abc' },
      /KHRUN_LEASE_SECONDS="abc": must be a positive/,
      "See 'khrun run --help' for usage.",
    ],
    [
      ['run', '--check', 'x'],
      {},
      /KUBECONFIG="\/nonexistent\/kubeconfig": cannot be used/,
      "See 'khrun run --help' for usage.",
    ],
    [
      ['tick', '--mode', 'cron'],
      {},
      /--mode="cron": must be job or lambda/,
      "See 'khrun tick --help' for usage.",
    ],
    [
      ['tick'],
      { KHRUN_FIRST_RUN_JITTER: 'soon' },
      /KHRUN_FIRST_RUN_JITTER="soon": must be a non-negative Go/,
      "See 'khrun tick --help' for usage.",
    ],
    [
      ['sync'],
      { KHRUN_NAMESPACE: 'Not_A_Namespace' },
      /KHRUN_NAMESPACE="Not_A_Namespace": is not a namespace/,
      "See 'khrun sync --help' for usage.",
    ],
    [
      ['serve', '--port', '8o8o'],
      {},
      /--port="8o8o": must be a TCP port number, 0 to 65535/,
      "See 'khrun serve --help' for usage.",
    ],
    [
      ['local', 'down'],
      {},
      /the local command has one subcommand: local up/,
      "See 'khrun local --help' for usage.",
    ],
  ])('khrun %j (env %j) exits 2', async (args, env, message, hint) => {
    const result = await cli(args, env);
    expect(result.code).toBe(2);
    expect(result.out).toMatch(message);
    // Two lines: the message, then the hint; no usage.
    expect(result.out.split('\n')).toEqual([expect.stringMatching(/^khrun: /), hint]);
    expect(result.out).not.toContain('usage: khrun');
  });
});

// The real entrypoint: streams, exit codes, and the bug this started from (`khrun run --help` said
// "Unknown option '--help'" and exited 2).
describe('the khrun process', () => {
  it(
    '`khrun run --help` prints the run usage on stdout and exits 0, as `khrun help run` does',
    async () => {
      const help = await spawnCli(['run', '--help']);
      expect(help).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toMatch(
        /^usage: khrun run --check NAME \| --job NAME \| --healthcheck NAME \[flags\]\n/,
      );
      expect(help.stdout).toContain('-n, --namespace NS');
      expect((await spawnCli(['help', 'run'])).stdout).toBe(help.stdout);
    },
    SPAWNS_MS,
  );

  it(
    'an unknown flag: its name and where the usage is on stderr, nothing on stdout, exit 2',
    async () => {
      const result = await spawnCli(['status', '--bogus']);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `khrun: unknown flag --bogus for "status"\nSee 'khrun status --help' for usage.\n`,
      );
    },
    SPAWNS_MS,
  );

  it(
    'an old spelling warns on stderr and still counts; no command is exit 2',
    async () => {
      const result = await spawnCli(['tick', '--namespaces', 'a,b']);
      expect(result.stderr.split('\n')[0]).toBe('khrun: --namespaces is deprecated; use -n/--namespace a,b');
      expect(result.code).toBe(2); // the nonexistent kubeconfig, after the warning
      expect((await spawnCli([])).code).toBe(2);
    },
    SPAWNS_MS,
  );
});
