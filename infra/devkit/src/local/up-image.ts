import { access, copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildBundles } from '../build/bundle.ts';
import { buildCheckoutBundle, withBuildLock } from '../build/checkout-bundle.ts';
import { CHECKOUT_DIR, readStamp, staleReason } from '../build/checkout-stamp.mjs';

/** The directory that stands for the khrun image's /app/dist under `khrun local up` (a child of .khrun). */
export const IMAGE_DIST_DIR = join(CHECKOUT_DIR, 'image-dist');
/** Which checkout bundle image-dist/khrun.mjs is a copy of. */
const SOURCE_FILE = 'source';

export interface ImageBundle {
  /** What the process kubelet runs as the image's /app/dist: khrun.mjs, khrun.cjs, its map and code cache. */
  distDir: string;
  /** Why it was built now (`no CLI bundle built yet`, `lib/x.ts changed`); undefined: it was current. */
  built?: string;
}

/**
 * The image `khrun` as `khrun local up` runs it: the checkout's CLI bundle (functions/khrun.mjs keeps it
 * current by its stamp, .khrun/cli.json; it is built with the image's esbuild options, so it is the code
 * `npm run build` would ship), rebuilt first when missing or stale, and copied to image-dist/khrun.mjs
 * (with the khrun.cjs it runs), the name the image's ENTRYPOINT gives it. A fresh clone therefore runs the shipped tick's pods without
 * `npm run build`. When another invocation holds the build lock, the bundle is built straight into
 * image-dist instead of waiting for it.
 */
export async function ensureImageBundle(opts: {
  root: string;
  devCommands: readonly string[];
  nowMs: number;
}): Promise<ImageBundle> {
  const distDir = join(opts.root, IMAGE_DIST_DIR);
  await mkdir(distDir, { recursive: true });
  const stamp = readStamp(opts.root);
  const reason = stamp ? staleReason(opts.root, stamp) : 'no CLI bundle built yet';
  let bundle = stamp && reason === undefined ? join(opts.root, CHECKOUT_DIR, stamp.bundle) : undefined;
  if (!bundle) {
    const id = `${opts.nowMs.toString(36)}-${process.pid}`;
    bundle = await withBuildLock(opts.root, opts.nowMs, () =>
      buildCheckoutBundle({ root: opts.root, devCommands: opts.devCommands, nowMs: opts.nowMs, id }),
    );
    if (!bundle) {
      await buildBundles({
        root: opts.root,
        outdir: distDir,
        entries: [{ source: 'functions/cli.ts', name: 'khrun' }],
      });
      await writeFile(join(distDir, SOURCE_FILE), '');
      return { distDir, built: reason };
    }
  }
  const name = bundle.slice(bundle.lastIndexOf('/') + 1);
  const copied = await readFile(join(distDir, SOURCE_FILE), 'utf8').catch(() => '');
  const present = await Promise.all(['khrun.mjs', 'khrun.cjs'].map((f) => access(join(distDir, f)))).then(
    () => true,
    () => false,
  );
  if (copied !== name || !present) {
    // Copied, not linked: a later build removes the checkout bundle this one was made from. Each file is
    // replaced whole (a rename); the entry is the same loader in every build, and it takes a code cache
    // only of the bundle beside it, so a pod starting midway runs the old bundle or the new one.
    const code = bundle.replace(/\.mjs$/, '.cjs');
    const files: Array<[string, string, boolean]> = [
      [`${code}.map`, 'khrun.cjs.map', false],
      [`${code}.cache`, 'khrun.cjs.cache', false],
      [code, 'khrun.cjs', true],
      [bundle, 'khrun.mjs', true],
    ];
    for (const [from, to, required] of files) {
      const temporary = join(distDir, `${to}.${process.pid}.tmp`);
      const done = await copyFile(from, temporary).then(
        () => true,
        (error: unknown) => {
          if (required) throw error;
          return false;
        },
      );
      if (done) await rename(temporary, join(distDir, to));
    }
    await writeFile(join(distDir, SOURCE_FILE), name);
  }
  return { distDir, ...(reason === undefined ? {} : { built: reason }) };
}
