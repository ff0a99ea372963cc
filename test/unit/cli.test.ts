import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const khrun = resolve(import.meta.dirname, '../../functions/khrun.mjs');
// Each case starts the CLI through tsx (twice in one of them): on a loaded 2-core CI machine that takes
// several seconds, past vitest's default 5 s, and a timeout there is a false failure.
const SPAWNS_MS = 60_000;

async function cli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [khrun, ...args], {
      env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig', ...env },
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

// Usage and configuration mistakes are exit 2 with a message that names the flag or variable and says
// what to do; nothing runs.
describe('khrun CLI usage errors', () => {
  it.each([
    [['frobnicate'], {}, /unknown command "frobnicate"/],
    [['run', '--bogus'], {}, /Unknown option '--bogus'/],
    [['run'], {}, /khrun: --check: the name of the khcheck to run is required; give --check or CHECK_NAME/],
    [['run', '--check', 'x', '-o', 'yaml'], {}, /--output="yaml": must be text or json/],
    [
      ['run', '--check', 'x', '--report-port', '70000'],
      {},
      /--report-port="70000": must be a TCP port number/,
    ],
    [
      ['run', '--check', 'x'],
      { KHRUN_LEASE_SECONDS: 'abc' },
      /KHRUN_LEASE_SECONDS="abc": must be a positive/,
    ],
    [['run', '--check', 'x'], {}, /KUBECONFIG="\/nonexistent\/kubeconfig": cannot be used/],
    [['tick', '--mode', 'cron'], {}, /--mode="cron": must be job or lambda/],
    [
      ['tick'],
      { KHRUN_FIRST_RUN_JITTER: 'soon' },
      /KHRUN_FIRST_RUN_JITTER="soon": must be a non-negative Go/,
    ],
    [
      ['sync'],
      { KHRUN_NAMESPACE: 'Not_A_Namespace' },
      /KHRUN_NAMESPACE="Not_A_Namespace": is not a namespace/,
    ],
    [['serve', '--port', '8o8o'], {}, /--port="8o8o": must be a TCP port number, 0 to 65535/],
    [['local', 'down'], {}, /the local command has one subcommand: local up/],
  ])(
    'khrun %j (env %j) exits 2',
    async (args, env, message) => {
      const result = await cli(args, env);
      expect(result.code).toBe(2);
      expect(result.out).toMatch(message);
      expect(result.out).toContain('usage: khrun <command>');
    },
    SPAWNS_MS,
  );

  it(
    'prints the usage with exit 0 for help, 2 without a command',
    async () => {
      expect(await cli(['help'])).toMatchObject({
        code: 0,
        out: expect.stringMatching(/^usage: khrun <command>/),
      });
      expect((await cli([])).code).toBe(2);
    },
    SPAWNS_MS,
  );
});
