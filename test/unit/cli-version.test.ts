import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { CliContext } from '../../functions/cli/context.ts';
import { main } from '../../functions/cli/main.ts';
import { versionDocument, versionLine } from '../../functions/cli/version.ts';

// `khrun version` answers with package.json's version and the Node.js running it, talks to no cluster,
// and with -o json|yaml prints the document alone, so a script can parse stdout as it is.

const root = resolve(import.meta.dirname, '../..');
const packageVersion = (
  JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version: string }
).version;

async function khrun(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CliContext = {
    root,
    env: { KUBECONFIG: '/nonexistent/kubeconfig' },
    write: (line) => out.push(line),
    warn: (line) => err.push(line),
  };
  const code = await main(argv, ctx, async (command) => {
    throw new Error(`no developer command is loaded here (${command})`);
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('khrun version', () => {
  it('prints `khrun VERSION (node vX.Y.Z)`; `khrun --version` is the same', async () => {
    const text = await khrun(['version']);
    expect(text).toEqual({
      code: 0,
      stdout: `khrun ${packageVersion} (node ${process.version})`,
      stderr: '',
    });
    expect(await khrun(['--version'])).toEqual(text);
  });

  it('-o json and -o yaml print only the document {version, node}', async () => {
    const json = await khrun(['version', '-o', 'json']);
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toEqual({ version: packageVersion, node: process.version });
    const yaml = await khrun(['--version', '--output=yaml']);
    expect(yaml.code).toBe(0);
    expect(parseYaml(yaml.stdout)).toEqual({ version: packageVersion, node: process.version });
  });

  it('a build that recorded its revision adds it to the line and the document; one without has none', () => {
    const sha = 'f'.repeat(40);
    expect(versionDocument(sha, 'v20.19.0')).toEqual({
      version: packageVersion,
      revision: sha,
      node: 'v20.19.0',
    });
    expect(versionLine(versionDocument(sha, 'v20.19.0'))).toBe(
      `khrun ${packageVersion} (revision ${sha}, node v20.19.0)`,
    );
    expect(versionDocument(undefined, 'v20.19.0')).toEqual({ version: packageVersion, node: 'v20.19.0' });
    expect(versionLine(versionDocument(undefined, 'v20.19.0'))).toBe(
      `khrun ${packageVersion} (node v20.19.0)`,
    );
  });

  it('an unknown -o or flag is a usage error (exit 2)', async () => {
    const wide = await khrun(['version', '-o', 'wide']);
    expect(wide.code).toBe(2);
    expect(wide.stdout).toBe('');
    expect(wide.stderr).toMatch(/^khrun: --output="wide": must be text, json or yaml/);
    expect((await khrun(['version', '-n', 'x'])).stderr).toMatch(/^khrun: unknown flag -n for "version"/);
  });

  it('is in `khrun help`', async () => {
    expect((await khrun(['help'])).stdout).toMatch(/\n {2}version {5}the khrun version/);
  });

  it('the process (functions/khrun.mjs: a checkout bundle or tsx) gives the same answer, stdout the document alone', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [
      resolve(root, 'functions/khrun.mjs'),
      'version',
      '-o',
      'json',
    ]);
    expect(stderr).toBe('');
    expect(stdout).toBe(`${JSON.stringify({ version: packageVersion, node: process.version })}\n`);
  }, 60_000);
});
