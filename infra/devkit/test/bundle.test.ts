import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BuildResult,
  buildBundles,
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

  it('writes minified ESM with the createRequire banner, a linked source map and a metafile', async () => {
    for (const bundle of result.bundles) {
      const code = await readFile(bundle.path, 'utf8');
      expect(code.startsWith(CREATE_REQUIRE_BANNER)).toBe(true);
      expect(code.trimEnd().endsWith(`//# sourceMappingURL=${bundle.name}.mjs.map`)).toBe(true);
      expect(bundle.mapBytes).toBeGreaterThan(0);
      expect(bundle.bytes).toBeLessThan(4_000_000);
    }
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
          `khrun: ${command[0]}: is a developer command, not part of this build (${join(outdir, 'khrun.mjs')})`,
        );
        expect(failed?.stderr).toContain('run it from a khrun checkout');
      }
    },
    SPAWNS_MS,
  );
});
