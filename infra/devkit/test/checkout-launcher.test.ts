import { execFile } from 'node:child_process';
import {
  appendFile,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckoutStamp } from '../src/build/checkout-stamp.mjs';

// functions/khrun.mjs in a copy of the checkout (functions/, lib/, infra/devkit/ and the configuration;
// node_modules linked), so that the tests can edit sources: which code each invocation ran is told by what it
// printed.

const repoRoot = resolve(import.meta.dirname, '../../..');
const execFileAsync = promisify(execFile);
// Builds and tsx starts on a loaded 2-core machine take seconds to tens of seconds.
const SLOW_MS = 240_000;
let checkout: string;

beforeAll(async () => {
  checkout = await mkdtemp(join(tmpdir(), 'khrun-launcher-'));
  for (const path of ['functions', 'lib', 'infra/devkit'])
    await cp(join(repoRoot, path), join(checkout, path), { recursive: true });
  for (const file of ['package.json', 'tsconfig.json']) await cp(join(repoRoot, file), join(checkout, file));
  await linkNodeModules();
});

/**
 * The copy's node_modules: a link to each of the checkout's packages, except the workspace link
 * @khrun/devkit, which points at the copy's infra/devkit as npm ci would make it. Linking the whole folder
 * would run the original's devkit, whose lib/ imports are the original's modules (another ConfigError).
 */
async function linkNodeModules() {
  const from = join(repoRoot, 'node_modules');
  const to = join(checkout, 'node_modules');
  await mkdir(join(to, '@khrun'), { recursive: true });
  for (const name of await readdir(from)) {
    if (name !== '@khrun') await symlink(join(from, name), join(to, name));
  }
  await symlink(join(checkout, 'infra/devkit'), join(to, '@khrun/devkit'));
}
afterAll(async () => {
  await rm(checkout, { recursive: true, force: true });
});

async function khrun(...args: string[]) {
  try {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      [join(checkout, 'functions/khrun.mjs'), ...args],
      {
        cwd: tmpdir(),
        env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig' },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const stamp = async () =>
  JSON.parse(await readFile(join(checkout, '.khrun/cli.json'), 'utf8')) as CheckoutStamp;

/** A top-level statement in a module the CLI bundle holds, so every run of that version prints it. */
async function editSource(marker: string) {
  await appendFile(join(checkout, 'lib/core/exit-codes.ts'), `\nprocess.stderr.write('${marker}\\n');\n`);
}

describe('functions/khrun.mjs: the bundle when current, else rebuilt or run from source', () => {
  it(
    'builds the bundle on first use, then runs it as long as nothing it was built from changed',
    async () => {
      const first = await khrun('help');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('usage: khrun <command>');
      const built = await stamp();
      expect(built.inputs['functions/cli.ts']).not.toBeNull();
      expect(built.inputs['lib/core/exit-codes.ts']).not.toBeNull();
      expect(built.devCommands).toEqual(expect.arrayContaining(['local', 'demo', 'build']));
      // Marks this bundle file: the next invocation prints the mark only if it ran this file.
      await appendFile(
        join(checkout, '.khrun', built.bundle),
        "\nprocess.stderr.write('ran the bundle\\n');\n",
      );
      const second = await khrun('help');
      expect(second.stdout).toBe(first.stdout);
      expect(second.stderr).toContain('ran the bundle');
      expect((await stamp()).bundle).toBe(built.bundle);
    },
    SLOW_MS,
  );

  it(
    'runs a source edit on the very next invocation (a rebuilt bundle)',
    async () => {
      const before = await stamp();
      await editSource('edit one');
      const run = await khrun('help');
      expect(run.code).toBe(0);
      expect(run.stderr).toContain('edit one');
      expect(run.stderr).not.toContain('ran the bundle');
      const after = await stamp();
      expect(after.bundle).not.toBe(before.bundle);
      // And that rebuilt bundle is what runs next.
      await appendFile(
        join(checkout, '.khrun', after.bundle),
        "\nprocess.stderr.write('ran the rebuilt bundle\\n');\n",
      );
      expect((await khrun('help')).stderr).toContain('ran the rebuilt bundle');
    },
    SLOW_MS,
  );

  it(
    'runs the sources through tsx while another invocation holds the build lock, and developer commands always',
    async () => {
      const before = await stamp();
      await mkdir(join(checkout, '.khrun/cli.lock'));
      try {
        await editSource('edit two');
        const run = await khrun('help');
        expect(run.code).toBe(0);
        expect(run.stderr).toContain('edit two');
        expect((await stamp()).bundle).toBe(before.bundle);
      } finally {
        await rm(join(checkout, '.khrun/cli.lock'), { recursive: true, force: true });
      }
      // A bundle holds no developer command: run from a bundle, `local` would say it is not part of it.
      const local = await khrun('local');
      expect(local.code).toBe(2);
      expect(local.stderr).toContain('the local command has one subcommand');
      expect(local.stderr).not.toContain('not part of this build');
    },
    SLOW_MS,
  );

  it(
    'takes over a build lock left by a dead invocation, and rebuilds over an unreadable stamp',
    async () => {
      const lock = join(checkout, '.khrun/cli.lock');
      await mkdir(lock);
      const tenMinutesAgo = new Date(Date.now() - 600_000);
      await utimes(lock, tenMinutesAgo, tenMinutesAgo);
      const run = await khrun('help');
      expect(run.stderr).toContain('edit two');
      const rebuilt = await stamp();
      await writeFile(join(checkout, '.khrun/cli.json'), '{"version": 1, "bundle": "../../etc');
      expect((await khrun('help')).code).toBe(0);
      expect((await stamp()).bundle).not.toBe(rebuilt.bundle);
      await expect(readFile(lock)).rejects.toMatchObject({ code: 'ENOENT' });
    },
    SLOW_MS,
  );

  it(
    'gives invocations started together after an edit the edited code, each of them',
    async () => {
      await editSource('edit three');
      const runs = await Promise.all([khrun('help'), khrun('help'), khrun('help')]);
      for (const run of runs) {
        expect(run.code).toBe(0);
        expect(run.stderr).toContain('edit three');
      }
      const next = await khrun('help');
      expect(next.stderr).toContain('edit three');
    },
    SLOW_MS,
  );
});
