import { execFile } from 'node:child_process';
import { copyFile, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { BuildOptions, Metafile } from 'esbuild';
import { REVISION_DEFINE } from './revision.ts';

const execFileAsync = promisify(execFile);

/**
 * The ESM bundles need `require` for the CommonJS code they inline (node-fetch asks for "stream" at run
 * time); without it the bundle fails at import with `Dynamic require of "stream" is not supported`.
 */
export const CREATE_REQUIRE_BANNER =
  "import { createRequire as __khrunCreateRequire } from 'node:module'; const require = __khrunCreateRequire(import.meta.url);";

/** The CLI's source: its bundle is CommonJS behind functions/cli-loader.mjs, every other bundle ESM. */
export const CLI_SOURCE = 'functions/cli.ts';
/** The CLI's entry of a build, copied beside the bundle as <name>.mjs (the loader says why). */
export const CLI_LOADER = 'functions/cli-loader.mjs';
/** What the loader's environment sets for the build's one run that writes the code cache. */
export const WRITE_CODE_CACHE_ENV = 'KHRUN_WRITE_CODE_CACHE';

/**
 * The CLI bundle is CommonJS (V8 code caches are for scripts, not ES modules); what its ES-module sources
 * read from import.meta is the bundle file's own.
 */
export const CLI_BANNER = "var __khrunImportMetaUrl = require('node:url').pathToFileURL(__filename).href;";

/**
 * Left out of every bundle: esbuild itself (only `khrun build` needs it, and that is a developer command),
 * and optional native add-ons that ws and debug probe for inside try/catch.
 */
export const BUNDLE_EXTERNALS = ['esbuild', 'bufferutil', 'utf-8-validate', 'supports-color'] as const;

/**
 * Packages bundled as a small stand-in (lib/shims/, each says why): node-fetch 2's whatwg-url fallback and
 * encoding, never used on Node 20+, whose code was a quarter of every bundle, parsed at every start
 * (`khrun version`, CPU a start, the least of 5 rounds of 20 starts: 447 ms with them, 373 ms without;
 * medians 477 and 446 ms). Relative to the repository root, as esbuild
 * resolves an alias from its working directory.
 */
export const BUNDLE_ALIASES = {
  'whatwg-url': './lib/shims/whatwg-url.mjs',
  encoding: './lib/shims/encoding.mjs',
} as const;

export interface BundleEntry {
  /** Source file, relative to the repository root. */
  source: string;
  /** Output name without extension: dist/<name>.mjs. */
  name: string;
}

export interface BuiltBundle extends BundleEntry {
  /** What runs: dist/<name>.mjs (for the CLI, the loader that runs its code). */
  path: string;
  /** The file holding the bundle's code: path, or for the CLI dist/<name>.cjs. */
  codePath: string;
  /** The CLI's V8 code cache (<name>.cjs.cache) size; 0 for the other bundles. */
  cacheBytes: number;
  bytes: number;
  gzipBytes: number;
  mapBytes: number;
}

export interface BuildResult {
  outdir: string;
  bundles: BuiltBundle[];
  metafilePath: string;
  warnings: string[];
}

/**
 * The entrypoints of functions/: the CLI (`cli.ts`, shipped as khrun.mjs) and every Lambda handler
 * (`lambda-*.ts`, each its own bundle so a function ships only what it imports).
 */
export async function discoverEntries(root: string): Promise<BundleEntry[]> {
  const files = (await readdir(join(root, 'functions'))).sort();
  const entries: BundleEntry[] = [{ source: 'functions/cli.ts', name: 'khrun' }];
  for (const file of files) {
    if (/^lambda-[a-z0-9-]+\.ts$/.test(file)) {
      entries.push({ source: `functions/${file}`, name: basename(file, '.ts') });
    }
  }
  return entries;
}

/**
 * The esbuild options of every khrun bundle: one minified ESM file per entry for Node 20, a linked source
 * map and a metafile. The deployable bundles (dist/) and the checkout's CLI bundle (checkout-bundle.ts)
 * share them, so `npx khrun` runs the code the image runs. A revision (the image's and the npm package's
 * builds) is compiled in for `khrun version`; the checkout's bundle has none.
 */
export function esbuildOptions(
  root: string,
  entries: readonly BundleEntry[],
  outdir: string,
  revision?: string,
) {
  return {
    absWorkingDir: root,
    entryPoints: entries.map((e) => ({ in: e.source, out: e.name })),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    minify: true,
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    mainFields: ['module', 'main'],
    legalComments: 'none',
    banner: { js: CREATE_REQUIRE_BANNER },
    external: [...BUNDLE_EXTERNALS],
    alias: { ...BUNDLE_ALIASES },
    define: (revision ? { [REVISION_DEFINE]: JSON.stringify(revision) } : {}) as Record<string, string>,
    logLevel: 'silent',
  } satisfies BuildOptions;
}

/**
 * The CLI's esbuild options: the same as every bundle's but CommonJS, <name>.cjs, so that its entry
 * (CLI_LOADER) can start it from a V8 code cache.
 */
export function cliEsbuildOptions(root: string, entry: BundleEntry, outdir: string, revision?: string) {
  const base = esbuildOptions(root, [entry], outdir, revision);
  return {
    ...base,
    format: 'cjs',
    outExtension: { '.js': '.cjs' },
    banner: { js: CLI_BANNER },
    define: {
      ...base.define,
      'import.meta.url': '__khrunImportMetaUrl',
      'import.meta.dirname': '__dirname',
      'import.meta.filename': '__filename',
    },
  } satisfies BuildOptions;
}

/**
 * Makes a built CLI bundle (<name>.cjs in outdir) runnable: its entry <name>.mjs (CLI_LOADER), then the
 * code cache (<name>.cjs.cache), written by one `version` run of it with this Node. Throws when that run
 * fails: the bundle does not start. Returns the cache's size.
 */
export async function finishCliBundle(root: string, outdir: string, name: string): Promise<number> {
  const entry = join(outdir, `${name}.mjs`);
  await copyFile(join(root, CLI_LOADER), entry);
  const cache = join(outdir, `${name}.cjs.cache`);
  await rm(cache, { force: true });
  const env: NodeJS.ProcessEnv = { ...process.env, [WRITE_CODE_CACHE_ENV]: '1' };
  delete env.NODE_OPTIONS; // the cache is for Node as the bundle runs, without the build's preloads
  try {
    await execFileAsync(process.execPath, [entry, 'version'], { env, cwd: outdir, timeout: 60_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`the CLI bundle ${entry} did not run: ${stderr || String(error)}`, { cause: error });
  }
  return (await stat(cache)).size;
}

/**
 * Bundles each entry into one minified file for Node 20 with a linked source map (ESM; the CLI CommonJS
 * behind its loader, with its code cache: cliEsbuildOptions), and writes the esbuild metafile (meta.json)
 * for size analysis. The output directory is emptied of old bundles first.
 */
export async function buildBundles(opts: {
  root: string;
  outdir: string;
  entries?: BundleEntry[];
  /** The source revision `khrun version` reports (revision.ts); none when undefined or empty. */
  revision?: string;
}): Promise<BuildResult> {
  // Loaded lazily: the CLI bundle marks esbuild external, and only this command needs it.
  const esbuild = await import('esbuild');
  const entries = opts.entries ?? (await discoverEntries(opts.root));
  for (const old of await readdir(opts.outdir).catch(() => [] as string[])) {
    if (/\.[mc]js(\.map|\.cache)?$/.test(old) || old === 'meta.json')
      await rm(join(opts.outdir, old), { force: true });
  }
  const cli = entries.filter((e) => e.source === CLI_SOURCE);
  const modules = entries.filter((e) => e.source !== CLI_SOURCE);
  const results = await Promise.all([
    ...cli.map((e) => esbuild.build(cliEsbuildOptions(opts.root, e, opts.outdir, opts.revision))),
    ...(modules.length
      ? [esbuild.build(esbuildOptions(opts.root, modules, opts.outdir, opts.revision))]
      : []),
  ]);
  const cacheBytes = new Map<string, number>();
  for (const e of cli) cacheBytes.set(e.name, await finishCliBundle(opts.root, opts.outdir, e.name));
  const metafile: Metafile = { inputs: {}, outputs: {} };
  for (const r of results) {
    Object.assign(metafile.inputs, r.metafile.inputs);
    Object.assign(metafile.outputs, r.metafile.outputs);
  }
  const metafilePath = join(opts.outdir, 'meta.json');
  await writeFile(metafilePath, JSON.stringify(metafile));
  const bundles: BuiltBundle[] = [];
  for (const entry of entries) {
    const path = join(opts.outdir, `${entry.name}.mjs`);
    const codePath = entry.source === CLI_SOURCE ? join(opts.outdir, `${entry.name}.cjs`) : path;
    const code = await readFile(codePath);
    const map = await readFile(`${codePath}.map`).catch(() => Buffer.alloc(0));
    bundles.push({
      ...entry,
      path,
      codePath,
      cacheBytes: cacheBytes.get(entry.name) ?? 0,
      bytes: code.length,
      gzipBytes: gzipSync(code).length,
      mapBytes: map.length,
    });
  }
  const warnings = results
    .flatMap((r) => r.warnings)
    .map((w) => `${w.location ? `${w.location.file}:${w.location.line}: ` : ''}${w.text}`);
  return { outdir: opts.outdir, bundles, metafilePath, warnings };
}

/** Sizes as a person reads them: 1.95 MB, 357 kB. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1_000_000) return `${(bytes / 1_000_000).toFixed(2)} MB`;
  if (bytes >= 1_000) return `${(bytes / 1_000).toFixed(0)} kB`;
  return `${bytes} B`;
}

/** The table `khrun build` prints: one line per bundle, with its cold import time when measured. */
export function formatBuildTable(
  root: string,
  bundles: BuiltBundle[],
  importMs?: ReadonlyMap<string, { medianMs: number; runs: number }>,
): string[] {
  const rows = bundles.map((b) => {
    const cold = importMs?.get(b.name);
    return [
      relative(root, b.codePath),
      formatBytes(b.bytes),
      formatBytes(b.gzipBytes),
      formatBytes(b.mapBytes),
      cold ? `${cold.medianMs.toFixed(0)} ms (median of ${cold.runs})` : '',
    ];
  });
  const header = ['BUNDLE', 'SIZE', 'GZIP', 'MAP', importMs ? 'COLD IMPORT' : ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}
