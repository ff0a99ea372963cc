// The record that says whether the checkout's CLI bundle is current: which file it is, which commands it
// cannot run (the developer commands, kept out of every bundle), and the identity (modification time, size)
// of every file it was built from as esbuild read it. Plain JavaScript, because functions/khrun.mjs reads it
// before anything can compile TypeScript; checkout-bundle.ts writes it.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const STAMP_VERSION = 1;

/** Where the checkout's CLI bundle and its stamp live: a direct child of the root, so the bundle's root is right. */
export const CHECKOUT_DIR = '.khrun';
export const STAMP_FILE = 'cli.json';

/**
 * npm's record of what it installed: rewritten by every `npm ci` and `npm install`, so it stands for the
 * node_modules files the bundle holds (statting those 1,400 files would cost more than the start it saves).
 */
export const INSTALLED_PACKAGES = 'node_modules/.package-lock.json';

/** A file's identity: [mtimeMs, size], or null when it does not exist. */
export function fileIdentity(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  return stat ? [stat.mtimeMs, stat.size] : null;
}

/** The stamp of the checkout at root, or undefined when there is none (or it is unreadable or of another version). */
export function readStamp(root) {
  try {
    const stamp = JSON.parse(readFileSync(join(root, CHECKOUT_DIR, STAMP_FILE), 'utf8'));
    const valid =
      stamp?.version === STAMP_VERSION &&
      typeof stamp.bundle === 'string' &&
      /^cli-[a-z0-9-]+\.mjs$/.test(stamp.bundle) &&
      Array.isArray(stamp.devCommands) &&
      typeof stamp.inputs === 'object' &&
      stamp.inputs !== null;
    return valid ? stamp : undefined;
  } catch {
    return undefined;
  }
}

/** Whether two identities are the same file version (null: absent). */
export function sameIdentity(a, b) {
  if (a === null || b === null) return a === b;
  return Array.isArray(a) && Array.isArray(b) && a[0] === b[0] && a[1] === b[1];
}

/**
 * Why the stamp's bundle must not run, or undefined when it may: the bundle is gone, or an input's identity
 * differs from the one recorded (edited, replaced, created or deleted since the build).
 */
export function staleReason(root, stamp) {
  // The bundle's entry and the code it runs (cli-loader.mjs): both, or the build is not whole.
  for (const file of [stamp.bundle, stamp.bundle.replace(/\.mjs$/, '.cjs')]) {
    if (fileIdentity(join(root, CHECKOUT_DIR, file)) === null) return `${file} is missing`;
  }
  for (const [path, recorded] of Object.entries(stamp.inputs)) {
    if (!sameIdentity(recorded, fileIdentity(join(root, path)))) return `${path} changed`;
  }
  return undefined;
}
