import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spawner } from '../src/local/spawner.ts';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('Spawner', () => {
  let dir: string;
  let spawner: Spawner;
  const orphans: number[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'khrun-spawner-'));
    spawner = new Spawner();
  });
  afterEach(async () => {
    spawner.close();
    for (const pid of orphans.splice(0)) if (alive(pid)) process.kill(-pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('starts a detached process with the given env, its output appended to the log, and reports its exit', async () => {
    const log = join(dir, 'out.log');
    const proc = await spawner.start({
      command: '/bin/sh',
      args: ['-c', 'echo "out $GREETING"; echo err >&2; exit 3'],
      env: { GREETING: 'hello' },
      logFile: log,
    });
    expect(proc.pid).toBeGreaterThan(0);
    expect(proc.pid).not.toBe(process.pid);
    await expect(proc.exited).resolves.toEqual({ code: 3, signal: null });
    const again = await spawner.start({
      command: '/bin/sh',
      args: ['-c', 'echo second'],
      env: {},
      logFile: log,
    });
    await again.exited;
    expect(await readFile(log, 'utf8')).toBe('out hello\nerr\nsecond\n');
  });

  it('reports a signal, sent to the process group by pid', async () => {
    const proc = await spawner.start({
      command: '/bin/sh',
      args: ['-c', 'sleep 30 & wait'],
      env: {},
      logFile: join(dir, 'sleep.log'),
    });
    orphans.push(proc.pid);
    process.kill(-proc.pid, 'SIGTERM');
    await expect(proc.exited).resolves.toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('refuses a command that does not exist and a log file it cannot open, saying why', async () => {
    await expect(
      spawner.start({ command: join(dir, 'missing'), args: [], env: {}, logFile: join(dir, 'a.log') }),
    ).rejects.toThrow(/ENOENT/);
    await expect(
      spawner.start({ command: '/bin/true', args: [], env: {}, logFile: join(dir, 'no', 'such', 'dir.log') }),
    ).rejects.toThrow(/ENOENT.*dir\.log/);
  });

  it('runs a command to its end and captures its output or its failure', async () => {
    await expect(spawner.run('/bin/sh', ['-c', 'echo one; echo two >&2'])).resolves.toEqual({
      stdout: 'one\n',
      stderr: 'two\n',
    });
    const failed = await spawner.run('/bin/sh', ['-c', 'echo partial; echo bad >&2; exit 4']);
    expect(failed).toMatchObject({ stdout: 'partial\n', stderr: 'bad\n' });
    expect(failed.error).toMatch(/Command failed/);
  });

  it('fails what was pending when its helper dies and starts a new helper for the next request', async () => {
    const proc = await spawner.start({
      command: '/bin/sleep',
      args: ['30'],
      env: {},
      logFile: join(dir, 'sleep.log'),
    });
    orphans.push(proc.pid);
    const helper = spawner.helperPid;
    expect(helper).toBeGreaterThan(0);
    process.kill(helper!, 'SIGKILL');
    await expect(proc.exited).rejects.toThrow(/the spawner process ended \(SIGKILL\)/);
    expect(alive(proc.pid)).toBe(true); // its own session: the helper's death does not take it along
    const next = await spawner.run('/bin/echo', ['back']);
    expect(next.stdout).toBe('back\n');
    expect(spawner.helperPid).not.toBe(helper);
  });

  it('refuses requests once closed, and its helper ends', async () => {
    await spawner.run('/bin/true', []);
    const helper = spawner.helperPid!;
    spawner.close();
    await expect(spawner.run('/bin/true', [])).resolves.toMatchObject({ error: 'the spawner is closed' });
    await expect(
      spawner.start({ command: '/bin/true', args: [], env: {}, logFile: join(dir, 'a.log') }),
    ).rejects.toThrow('the spawner is closed');
    await expect.poll(() => alive(helper), { timeout: 5_000 }).toBe(false);
  });
});
