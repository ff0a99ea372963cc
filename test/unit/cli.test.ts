import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const khrun = resolve(import.meta.dirname, '../../functions/khrun.mjs');

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

// Usage and configuration mistakes are exit 2 with a message that says what to do; nothing runs.
describe('khrun CLI usage errors', () => {
  it.each([
    [['frobnicate'], /unknown command "frobnicate"/],
    [['run', '--bogus'], /Unknown option '--bogus'/],
    [['run'], /run needs --check NAME \(or CHECK_NAME\)/],
    [['run', '--check', 'x', '-o', 'yaml'], /--output must be text or json, not "yaml"/],
    [['run', '--check', 'x', '--report-port', '70000'], /the report port must be a TCP port number/],
    [['tick', '--mode', 'cron'], /--mode must be job or lambda, not "cron"/],
    [['local', 'down'], /the local command has one subcommand: local up/],
  ])('khrun %j exits 2', async (args, message) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.out).toMatch(message);
  });

  it('prints the usage with exit 0 for help, 2 without a command', async () => {
    expect(await cli(['help'])).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^usage: khrun <command>/),
    });
    expect((await cli([])).code).toBe(2);
  });
});
