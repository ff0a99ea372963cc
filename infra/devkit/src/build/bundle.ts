import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { BuildOptions } from 'esbuild';
import { REVISION_DEFINE } from './revision.ts';

/**
 * The ESM bundles need `require` for the CommonJS code they inline (node-fetch asks for "stream" at run
 * time); without it the bundle fails at import with `Dynamic require of "stream" is not supported`.
 */
export const CREATE_REQUIRE_BANNER =
  "import { createRequire as __khrunCreateRequire } from 'node:module'; const require = __khrunCreateRequire(import.meta.url);";

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
  path: string;
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
 * Bundles each entry into one minified ESM file for Node 20 with a linked source map, and writes the
 * esbuild metafile (meta.json) for size analysis. The output directory is emptied of old bundles first.
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
    if (/\.mjs(\.map)?$/.test(old) || old === 'meta.json') await rm(join(opts.outdir, old), { force: true });
  }
  const result = await esbuild.build(esbuildOptions(opts.root, entries, opts.outdir, opts.revision));
  const metafilePath = join(opts.outdir, 'meta.json');
  await writeFile(metafilePath, JSON.stringify(result.metafile));
  const bundles: BuiltBundle[] = [];
  for (const entry of entries) {
    const path = join(opts.outdir, `${entry.name}.mjs`);
    const code = await readFile(path);
    const map = await readFile(`${path}.map`).catch(() => Buffer.alloc(0));
    bundles.push({
      ...entry,
      path,
      bytes: code.length,
      gzipBytes: gzipSync(code).length,
      mapBytes: map.length,
    });
  }
  const warnings = result.warnings.map(
    (w) => `${w.location ? `${w.location.file}:${w.location.line}: ` : ''}${w.text}`,
  );
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
      relative(root, b.path),
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
