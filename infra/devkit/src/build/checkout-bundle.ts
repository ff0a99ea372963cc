import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { extname, isAbsolute, join, relative, sep } from 'node:path';
import type { Loader, Plugin } from 'esbuild';
import { CLI_LOADER, CLI_SOURCE, cliEsbuildOptions, finishCliBundle } from './bundle.ts';
import {
  CHECKOUT_DIR,
  type CheckoutStamp,
  type FileIdentity,
  fileIdentity,
  INSTALLED_PACKAGES,
  STAMP_FILE,
  STAMP_VERSION,
} from './checkout-stamp.mjs';

/**
 * Files that shape the bundle without being in it: the build's own code, the compiler settings esbuild
 * reads, and npm's record of the installed packages. A change to any of them rebuilds.
 */
export const BUILD_CONFIG_FILES = [
  'infra/devkit/src/build/bundle.ts',
  'infra/devkit/src/build/checkout-bundle.ts',
  'infra/devkit/src/build/revision.ts',
  'infra/devkit/src/build/checkout-stamp.mjs',
  CLI_LOADER,
  'tsconfig.json',
  'package.json',
  INSTALLED_PACKAGES,
] as const;

/** A build lock older than this belongs to an invocation that died: taken over. */
export const STALE_LOCK_MS = 120_000;
/** Bundles replaced longer ago than this are deleted (an invocation may have read the old stamp just now). */
export const OLD_BUNDLE_GRACE_MS = 60_000;

const LOADERS: Record<string, Loader> = {
  '.ts': 'ts',
  '.mts': 'ts',
  '.cts': 'ts',
  '.js': 'js',
  '.mjs': 'js',
  '.cjs': 'js',
  '.json': 'json',
};

/**
 * Loads the checkout's own files (not node_modules, which INSTALLED_PACKAGES stands for) itself, taking each
 * file's identity just before reading it: an edit after that point changes the identity, so the stamp can
 * never call a bundle current that holds an older version of a file.
 */
function recordReads(root: string, identities: Map<string, FileIdentity>): Plugin {
  return {
    name: 'khrun-record-reads',
    setup(build) {
      build.onLoad({ filter: /.*/, namespace: 'file' }, (args) => {
        const path = relative(root, args.path);
        const loader = LOADERS[extname(args.path)];
        if (!loader || path.startsWith('..') || isAbsolute(path) || path.split(sep).includes('node_modules'))
          return undefined;
        identities.set(path.split(sep).join('/'), fileIdentity(args.path));
        return { contents: readFileSync(args.path), loader };
      });
    },
  };
}

/**
 * Runs fn holding the checkout's build lock (a directory: mkdir is atomic), or returns undefined at once
 * when another invocation holds it: the caller then runs from source instead of waiting.
 */
export async function withBuildLock<T>(
  root: string,
  nowMs: number,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  const lock = join(root, CHECKOUT_DIR, 'cli.lock');
  mkdirSync(join(root, CHECKOUT_DIR), { recursive: true });
  const take = () => {
    try {
      mkdirSync(lock);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return false;
    }
  };
  let taken = take();
  if (!taken) {
    const heldSinceMs = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
    if (heldSinceMs !== undefined && nowMs - heldSinceMs > STALE_LOCK_MS) {
      rmSync(lock, { recursive: true, force: true });
      taken = take();
    }
  }
  if (!taken) return undefined;
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Builds functions/cli.ts into CHECKOUT_DIR/cli-<id>.mjs (the loader, running cli-<id>.cjs from its code
 * cache) with the deployable bundles' options and makes it current by replacing the stamp in one rename (a
 * new file name per build, so an invocation never runs a bundle whose stamp belongs to another build). Returns the bundle's path. Throws what esbuild throws (a
 * syntax error, esbuild not installed); the caller then runs from source, which reports it as usual.
 */
export async function buildCheckoutBundle(opts: {
  root: string;
  devCommands: readonly string[];
  nowMs: number;
  id: string;
}): Promise<string> {
  const esbuild = await import('esbuild');
  const dir = join(opts.root, CHECKOUT_DIR);
  const name = `cli-${opts.id}`;
  const identities = new Map<string, FileIdentity>();
  for (const file of BUILD_CONFIG_FILES) identities.set(file, fileIdentity(join(opts.root, file)));
  const base = cliEsbuildOptions(opts.root, { source: CLI_SOURCE, name }, dir);
  const result = await esbuild.build({ ...base, plugins: [recordReads(opts.root, identities)] });
  await finishCliBundle(opts.root, dir, name);
  const inputs: Record<string, FileIdentity> = {};
  for (const input of Object.keys(result.metafile.inputs)) {
    if (input.split('/').includes('node_modules')) continue;
    const recorded = identities.get(input);
    if (recorded !== undefined) {
      inputs[input] = recorded;
      continue;
    }
    // Read by esbuild itself (a file type the plugin does not load): trusted only if it was last written
    // before the build started; otherwise recorded as unknown, which the next invocation sees as a change.
    const now = fileIdentity(join(opts.root, input));
    inputs[input] = now !== null && now[0] < opts.nowMs - 1000 ? now : null;
  }
  for (const file of BUILD_CONFIG_FILES) inputs[file] = identities.get(file) ?? null;
  const stamp: CheckoutStamp = {
    version: STAMP_VERSION,
    bundle: `${name}.mjs`,
    devCommands: [...opts.devCommands],
    inputs,
  };
  const temporary = join(dir, `${STAMP_FILE}.${opts.id}.tmp`);
  writeFileSync(temporary, `${JSON.stringify(stamp)}\n`);
  renameSync(temporary, join(dir, STAMP_FILE));
  removeOldBundles(dir, stamp.bundle, opts.nowMs);
  return join(dir, stamp.bundle);
}

/**
 * Deletes earlier builds' files (entry, bundle, map, code cache), once no invocation can still be about to
 * import them.
 */
function removeOldBundles(dir: string, current: string, nowMs: number): void {
  const currentName = current.replace(/\.mjs$/, '.');
  for (const file of readdirSync(dir)) {
    if (!/^cli-[a-z0-9-]+\.(mjs|cjs)(\.map|\.cache)?$/.test(file) || file.startsWith(currentName)) continue;
    const mtimeMs = statSync(join(dir, file), { throwIfNoEntry: false })?.mtimeMs;
    if (mtimeMs !== undefined && nowMs - mtimeMs > OLD_BUNDLE_GRACE_MS)
      rmSync(join(dir, file), { force: true });
  }
}
