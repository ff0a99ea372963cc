import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startExecutionEnvironment } from '../src/lambda/execution-environment.ts';

// An emulator that exits before it serves (its port taken by another process between the free-port query
// and its bind) is started again on fresh ports; after three such exits the start fails and says what the
// emulator printed. Stand-in emulators (shell scripts) here: the real one runs in the Lambda runtime tests.
const dir = mkdtempSync(join(tmpdir(), 'khrun-rie-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const config = {
  functionName: 'khrun-test-report',
  handler: 'functions/lambda-report.handler',
  runtime: 'nodejs22.x',
  timeoutSeconds: 5,
  memoryMb: 128,
  environment: {},
};

function emulator(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

const start = (rie: string, logFile: string) =>
  startExecutionEnvironment({
    parts: { rie, node: process.execPath, ric: '/nonexistent' },
    taskRoot: dir,
    config,
    logFile,
  });

describe('starting an execution environment whose emulator exits before it serves', () => {
  it('tries three times on fresh ports, then fails naming what the emulator printed', async () => {
    const rie = emulator('taken', 'echo "listen tcp $2: bind: address already in use" >&2; exit 1');
    const logFile = join(dir, 'taken.log');
    await expect(start(rie, logFile)).rejects.toThrow(
      /khrun-test-report: the emulator exited before it served after 3 attempts; its log ends: .*address already in use/,
    );
    expect(readFileSync(logFile, 'utf8').match(/address already in use/g)).toHaveLength(3);
  });

  it('serves from the second start when only the first one lost its port', async () => {
    const count = join(dir, 'starts');
    // The first start exits; the second listens on the invoke address it was given (the emulator's $2).
    const rie = emulator(
      'second',
      `echo x >> '${count}'
if [ "$(wc -l < '${count}')" -lt 2 ]; then echo "bind: address already in use" >&2; exit 1; fi
port=\${2##*:}
exec '${process.execPath}' -e "require('node:net').createServer().listen(Number(process.argv[1]), '127.0.0.1')" "$port"`,
    );
    const env = await start(rie, join(dir, 'second.log'));
    try {
      expect(env.invokeUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
      expect(readFileSync(count, 'utf8').trim().split('\n')).toHaveLength(2);
      expect(readFileSync(join(dir, 'second.log'), 'utf8')).toContain('exited before it served (attempt 1)');
    } finally {
      await env.stop();
    }
  });
});
