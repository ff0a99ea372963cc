import { execFile } from 'node:child_process';
import { appendFile, cp, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerfileCommand } from '../src/local/kubelet/khrun-image.ts';
import { ensureImageBundle, IMAGE_DIST_DIR } from '../src/local/up-image.ts';

// `khrun local up` runs image `khrun` from the checkout's current CLI bundle: built when missing (a fresh
// clone, no `npm run build`), rebuilt when a source changed, reused otherwise, always at the name the
// image's ENTRYPOINT gives it. In a copy of the checkout (node_modules linked), so sources can be edited.

const repoRoot = resolve(import.meta.dirname, '../../..');
const execFileAsync = promisify(execFile);
const SLOW_MS = 240_000;
const DEV = ['local', 'demo', 'build'];
let checkout: string;

beforeAll(async () => {
  checkout = await mkdtemp(join(tmpdir(), 'khrun-up-image-'));
  for (const path of ['functions', 'lib', 'infra/devkit', 'infra/image'])
    await cp(join(repoRoot, path), join(checkout, path), { recursive: true });
  for (const file of ['package.json', 'tsconfig.json']) await cp(join(repoRoot, file), join(checkout, file));
  const from = join(repoRoot, 'node_modules');
  const to = join(checkout, 'node_modules');
  await mkdir(join(to, '@khrun'), { recursive: true });
  for (const name of await readdir(from))
    if (name !== '@khrun') await symlink(join(from, name), join(to, name));
  await symlink(join(checkout, 'infra/devkit'), join(to, '@khrun/devkit'));
});
afterAll(async () => {
  await rm(checkout, { recursive: true, force: true });
});

/** The image's entrypoint as the process kubelet runs it: node DIST/khrun.mjs ARGS. */
async function runImage(distDir: string, ...args: string[]) {
  const { entrypoint } = dockerfileCommand(await readFile(join(checkout, 'infra/image/Dockerfile'), 'utf8'));
  const bundle = entrypoint.find((a) => a.startsWith('/app/dist/'))?.slice('/app/dist/'.length);
  expect(bundle).toBe('khrun.mjs');
  const { stdout, stderr } = await execFileAsync(process.execPath, [join(distDir, bundle ?? ''), ...args], {
    env: { ...process.env, KUBECONFIG: '/nonexistent' },
  });
  return stdout + stderr;
}

describe('the image bundle of khrun local up', () => {
  it(
    'a fresh clone: built, and image khrun runs it; then reused until a source changes, then rebuilt',
    async () => {
      const first = await ensureImageBundle({ root: checkout, devCommands: DEV, nowMs: Date.now() });
      expect(first).toEqual({ distDir: join(checkout, IMAGE_DIST_DIR), built: 'no CLI bundle built yet' });
      expect(await runImage(first.distDir, 'version')).toMatch(/^khrun \d+\.\d+\.\d+/);

      const again = await ensureImageBundle({ root: checkout, devCommands: DEV, nowMs: Date.now() });
      expect(again).toEqual({ distDir: first.distDir });

      await appendFile(join(checkout, 'lib/core/exit-codes.ts'), "\nprocess.stderr.write('edited\\n');\n");
      const rebuilt = await ensureImageBundle({ root: checkout, devCommands: DEV, nowMs: Date.now() });
      expect(rebuilt.built).toBe('lib/core/exit-codes.ts changed');
      expect(await runImage(rebuilt.distDir, 'version')).toContain('edited');
    },
    SLOW_MS,
  );

  it(
    'the copy is replaced when it is deleted, and is not the checkout bundle itself (which a later build removes)',
    async () => {
      const before = await ensureImageBundle({ root: checkout, devCommands: DEV, nowMs: Date.now() });
      await rm(join(before.distDir, 'khrun.mjs'));
      const after = await ensureImageBundle({ root: checkout, devCommands: DEV, nowMs: Date.now() });
      expect(after.built).toBeUndefined();
      expect(await runImage(after.distDir, 'version')).toMatch(/^khrun /);
      const stamp = JSON.parse(await readFile(join(checkout, '.khrun/cli.json'), 'utf8')) as {
        bundle: string;
      };
      await rm(join(checkout, '.khrun', stamp.bundle));
      // The checkout bundle is gone (stale): rebuilt, and the image copy follows.
      const rebuilt = await ensureImageBundle({ root: checkout, devCommands: DEV, nowMs: Date.now() });
      expect(rebuilt.built).toBe(`${stamp.bundle} is missing`);
      expect(await runImage(rebuilt.distDir, 'version')).toMatch(/^khrun /);
    },
    SLOW_MS,
  );
});
