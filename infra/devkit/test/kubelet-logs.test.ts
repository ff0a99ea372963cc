import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseLogQuery } from '../src/local/kubelet/log-server.ts';
import { lastBytes, lastLines, readTail, terminationMessage } from '../src/local/kubelet/logs.ts';

describe('lastLines', () => {
  it.each([
    ['a\nb\nc\n', 2, 'b\nc\n'],
    ['a\nb\nc', 2, 'b\nc'],
    ['a\nb\nc\n', 5, 'a\nb\nc\n'],
    ['a\nb\nc\n', 0, ''],
    ['', 3, ''],
    ['only', 1, 'only'],
  ])('%j, %i → %j', (text, n, out) => {
    expect(lastLines(text, n)).toBe(out);
  });
});

describe('termination messages', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const files = async (message: string, log: string) => {
    const dir = await mkdtemp(join(tmpdir(), 'kubelet-logs-'));
    dirs.push(dir);
    await writeFile(join(dir, 'msg'), message);
    await writeFile(join(dir, 'log'), log);
    return { messageFile: join(dir, 'msg'), logFile: join(dir, 'log') };
  };

  it('prefers the file the container wrote, whatever the policy and exit code', async () => {
    const f = await files('from file', 'from log\n');
    expect(await terminationMessage({ ...f, policy: 'FallbackToLogsOnError', exitCode: 1 })).toBe(
      'from file',
    );
    expect(await terminationMessage({ ...f, policy: 'File', exitCode: 0 })).toBe('from file');
  });

  it('falls back to the last 80 lines / 2048 bytes of the log only on failure with FallbackToLogsOnError', async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    const f = await files('', `${lines}\n`);
    const message = await terminationMessage({ ...f, policy: 'FallbackToLogsOnError', exitCode: 2 });
    expect(message?.split('\n').filter(Boolean)).toHaveLength(80);
    expect(message?.startsWith('line 20\n')).toBe(true);
    expect(await terminationMessage({ ...f, policy: 'FallbackToLogsOnError', exitCode: 0 })).toBeUndefined();
    expect(await terminationMessage({ ...f, policy: 'File', exitCode: 2 })).toBeUndefined();
  });

  it('caps the fallback at 2048 bytes', async () => {
    const f = await files('', `${'x'.repeat(5000)}\n`);
    const message = await terminationMessage({ ...f, policy: 'FallbackToLogsOnError', exitCode: 2 });
    expect(Buffer.byteLength(message ?? '')).toBe(2048);
  });

  it('reads a tail, and nothing from a missing file', async () => {
    const f = await files('', 'abcdef');
    expect((await readTail(f.logFile, 3)).toString()).toBe('def');
    expect((await readTail('/nonexistent/file', 3)).length).toBe(0);
    expect(lastBytes(Buffer.from('abc'), 5).toString()).toBe('abc');
  });
});

describe('parseLogQuery', () => {
  it('reads the kubelet parameters the API server forwards', () => {
    expect(
      parseLogQuery(new URLSearchParams('tailLines=5&limitBytes=100&follow=true&previous=true')),
    ).toEqual({
      tailLines: 5,
      limitBytes: 100,
      follow: true,
      previous: true,
    });
    expect(parseLogQuery(new URLSearchParams('tailLines=-1&limitBytes=x'))).toEqual({
      tailLines: undefined,
      limitBytes: undefined,
      follow: false,
      previous: false,
    });
  });
});
