import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BuildResult,
  buildBundles,
  CLI_BANNER,
  CLI_LOADER,
  CREATE_REQUIRE_BANNER,
  discoverEntries,
} from '../src/build/bundle.ts';
import { measureColdImport } from '../src/build/cold-import.ts';

const root = resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);
/** The revision these bundles are built with, as the image's build passes its commit (--revision). */
const REVISION = '0123456789abcdef0123456789abcdef01234567';
// Tests that start Node processes: generous, since a loaded 2-core CI machine takes seconds per start.
const SPAWNS_MS = 60_000;
let outdir: string;
let result: BuildResult;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), 'khrun-bundle-'));
  result = await buildBundles({ root, outdir, revision: REVISION });
}, 120_000);
afterAll(async () => {
  await rm(outdir, { recursive: true, force: true });
});

describe('esbuild bundles of functions/', () => {
  it('has one entry for the CLI and one per Lambda handler', async () => {
    const names = (await discoverEntries(root)).map((e) => e.name);
    expect(names).toEqual([
      'khrun',
      'lambda-report',
      'lambda-run-check',
      'lambda-status',
      'lambda-tick',
      'lambda-trigger',
    ]);
    expect(result.bundles.map((b) => b.name)).toEqual(names);
    expect(result.warnings).toEqual([]);
  });

  it('writes minified ESM with the createRequire banner (the CLI: CommonJS behind its loader), a linked source map and a metafile', async () => {
    for (const bundle of result.bundles) {
      const code = await readFile(bundle.codePath, 'utf8');
      const file = bundle.name === 'khrun' ? 'khrun.cjs' : `${bundle.name}.mjs`;
      expect(bundle.codePath).toBe(join(outdir, file));
      expect(code.startsWith(bundle.name === 'khrun' ? CLI_BANNER : CREATE_REQUIRE_BANNER)).toBe(true);
      expect(code.trimEnd().endsWith(`//# sourceMappingURL=${file}.map`)).toBe(true);
      expect(bundle.mapBytes).toBeGreaterThan(0);
      expect(bundle.bytes).toBeLessThan(4_000_000);
      expect(bundle.cacheBytes > 0).toBe(bundle.name === 'khrun');
    }
    expect(await readFile(join(outdir, 'khrun.mjs'), 'utf8')).toBe(
      await readFile(join(root, CLI_LOADER), 'utf8'),
    );
    const meta = JSON.parse(await readFile(result.metafilePath, 'utf8')) as {
      inputs: Record<string, unknown>;
      outputs: Record<string, { entryPoint?: string }>;
    };
    expect(
      Object.values(meta.outputs)
        .map((o) => o.entryPoint)
        .filter(Boolean)
        .sort(),
    ).toEqual([
      'functions/cli.ts',
      'functions/lambda-report.ts',
      'functions/lambda-run-check.ts',
      'functions/lambda-status.ts',
      'functions/lambda-tick.ts',
      'functions/lambda-trigger.ts',
    ]);
    // esbuild itself is only for `khrun build`: left external, never shipped.
    expect(Object.keys(meta.inputs).some((p) => p.includes('node_modules/esbuild/'))).toBe(false);
  });

  it('ships no developer code: no product bundle has an input under infra/devkit/', async () => {
    const meta = JSON.parse(await readFile(result.metafilePath, 'utf8')) as {
      outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown> }>;
    };
    const products = Object.values(meta.outputs).filter((o) => o.entryPoint);
    expect(products).toHaveLength(result.bundles.length);
    for (const output of products) {
      const dev = Object.keys(output.inputs).filter(
        (p) => p.startsWith('infra/devkit/') || p === 'functions/cli/dev.ts',
      );
      expect({ bundle: output.entryPoint, dev }).toEqual({ bundle: output.entryPoint, dev: [] });
    }
  });

  it(
    'each bundle imports in a fresh Node process; the handlers export handler()',
    async () => {
      for (const bundle of result.bundles.filter((b) => b.name.startsWith('lambda-'))) {
        const { stdout } = await run(process.execPath, [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(`file://${bundle.path}`)}); console.log(typeof m.handler);`,
        ]);
        expect(stdout.trim()).toBe('function');
        const cold = await measureColdImport(bundle.path, { runs: 1 });
        expect(cold.medianMs).toBeGreaterThan(0);
      }
    },
    SPAWNS_MS,
  );

  it(
    'the CLI bundle runs without tsx or node_modules next to it',
    async () => {
      const { stdout } = await run(process.execPath, [join(outdir, 'khrun.mjs'), 'help'], { cwd: tmpdir() });
      expect(stdout).toContain('usage: khrun <command>');
      for (const command of ['serve', 'tick', 'sync', 'build']) expect(stdout).toContain(`  ${command} `);
    },
    SPAWNS_MS,
  );

  it(
    "the CLI bundle knows khrun's version without package.json next to it, and the revision it was built at",
    async () => {
      const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
        version: string;
      };
      const { stdout } = await run(process.execPath, [join(outdir, 'khrun.mjs'), 'version', '-o', 'json'], {
        cwd: tmpdir(),
      });
      expect(JSON.parse(stdout)).toEqual({ version, revision: REVISION, node: process.version });
      const text = await run(process.execPath, [join(outdir, 'khrun.mjs'), 'version'], { cwd: tmpdir() });
      expect(text.stdout).toBe(`khrun ${version} (revision ${REVISION}, node ${process.version})\n`);
    },
    SPAWNS_MS,
  );

  it(
    'the CLI bundle answers the developer commands with what to do, exit 2',
    async () => {
      for (const command of [['local', 'up'], ['demo'], ['build']]) {
        const failed = await run(process.execPath, [join(outdir, 'khrun.mjs'), ...command], {
          cwd: tmpdir(),
        }).then(
          () => undefined,
          (error: { code: number; stderr: string }) => error,
        );
        expect(failed?.code).toBe(2);
        expect(failed?.stderr).toContain(
          `khrun: ${command[0]}: is a developer command, not part of this build (${join(outdir, 'khrun.cjs')})`,
        );
        expect(failed?.stderr).toContain('run it from a khrun checkout');
      }
    },
    SPAWNS_MS,
  );
});

describe('the CLI loader (functions/cli-loader.mjs)', () => {
  /** The wrapper the loader compiles the bundle in, read from the loader itself. */
  const wrapperOf = async () =>
    /const WRAPPER = '([^']+)'/.exec(await readFile(join(root, CLI_LOADER), 'utf8'))![1]!;

  it('the code cache the build wrote is of this bundle and V8 takes it, wrapped as the loader wraps it', async () => {
    const source = await readFile(join(outdir, 'khrun.cjs'), 'utf8');
    const cache = await readFile(join(outdir, 'khrun.cjs.cache'));
    const digest = createHash('sha256').update(source).digest();
    expect(cache.subarray(0, 32).equals(digest)).toBe(true);
    const script = new vm.Script(`${await wrapperOf()}${source}\n})`, {
      filename: join(outdir, 'khrun.cjs'),
      cachedData: cache.subarray(32),
    });
    expect(script.cachedDataRejected).toBe(false);
  });

  it(
    "never runs a cache made from another bundle of the same length (V8 checks only the length): the bundle's own code runs",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'khrun-loader-'));
      try {
        for (const f of ['khrun.mjs', 'khrun.cjs.map', 'khrun.cjs.cache'])
          await copyFile(join(outdir, f), join(dir, f));
        // Another build, byte for byte as long: the revision compiled in differs; the cache is the old one.
        const other = REVISION.split('').reverse().join('');
        const source = await readFile(join(outdir, 'khrun.cjs'), 'utf8');
        expect(source.split(REVISION)).toHaveLength(2);
        await writeFile(join(dir, 'khrun.cjs'), source.replace(REVISION, other));
        const { stdout } = await run(process.execPath, [join(dir, 'khrun.mjs'), 'version', '-o', 'json'], {
          cwd: tmpdir(),
        });
        expect(JSON.parse(stdout)).toMatchObject({ revision: other });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    SPAWNS_MS,
  );

  it(
    "maps the bundle's stack frames to their sources when source maps are on, and only then",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'khrun-loader-'));
      try {
        await writeFile(
          join(dir, 'x.ts'),
          'function thrower(): never {\n  throw new Error("boom");\n}\nsetTimeout(() => thrower(), 1);\n',
        );
        const esbuild = await import('esbuild');
        await esbuild.build({
          entryPoints: [join(dir, 'x.ts')],
          outfile: join(dir, 'x.cjs'),
          format: 'cjs',
          minify: true,
          sourcemap: 'linked',
          logLevel: 'silent',
        });
        await copyFile(join(root, CLI_LOADER), join(dir, 'x.mjs'));
        const stderrOf = (args: string[]) =>
          run(process.execPath, [...args, join(dir, 'x.mjs')]).then(
            () => '',
            (error: { stderr: string }) => error.stderr,
          );
        expect(await stderrOf(['--enable-source-maps'])).toContain(`(${join(dir, 'x.ts')}:2:9)`);
        const unmapped = await stderrOf([]);
        expect(unmapped).toContain('Error: boom');
        expect(unmapped).not.toContain('x.ts');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    SPAWNS_MS,
  );
});
