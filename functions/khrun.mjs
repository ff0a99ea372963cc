#!/usr/bin/env node
// The `khrun` command, two ways:
// - Installed from the npm package (`npx khrun`, `npm install -g khrun`), which ships no TypeScript: it runs
//   the CLI bundle built when the package was packed (dist/khrun.mjs, the image's bundle).
// - In a checkout (npx khrun): it runs the CLI as one esbuild bundle, .khrun/cli-<id>.mjs, built with
//   dist/khrun.mjs's options, whenever .khrun/cli.json says the bundle is current with every file it was
//   built from: that starts like the shipped bundle, without compiling the TypeScript sources through tsx
//   and loading client-node file by file before the first API request. When a source changed, this
//   invocation rebuilds the bundle first; when it cannot (another invocation is building, esbuild is not
//   installed, a syntax error) it runs the TypeScript through tsx, which reports such errors itself. The
//   developer commands (local, demo, build) always run through tsx: their modules are in no bundle.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');
const command = process.argv[2];

if (!existsSync(resolve(root, 'functions/cli.ts'))) {
  await import(pathToFileURL(resolve(root, 'dist/khrun.mjs')).href);
} else {
  const { CHECKOUT_DIR, readStamp, staleReason } = await import('@khrun/devkit/build/checkout-stamp.mjs');
  const stamp = readStamp(root);
  if (stamp && !stamp.devCommands.includes(command) && staleReason(root, stamp) === undefined) {
    await import(pathToFileURL(resolve(root, CHECKOUT_DIR, stamp.bundle)).href);
  } else {
    const { register } = await import('tsx/esm/api');
    register();
    await import(await buildIfProduct());
  }
}

/** The module to run: a fresh bundle for a product command if one can be built now, else the TypeScript. */
async function buildIfProduct() {
  const source = './cli.ts';
  const { ALL_SPECS } = await import('./cli/commands.ts');
  const devCommands = ALL_SPECS.filter((spec) => spec.dev).map((spec) => spec.name);
  if (devCommands.includes(command)) return source;
  try {
    const { buildCheckoutBundle, withBuildLock } = await import('@khrun/devkit/build/checkout-bundle.ts');
    const nowMs = Date.now();
    const id = `${nowMs.toString(36)}-${process.pid}`;
    const bundle = await withBuildLock(root, nowMs, () =>
      buildCheckoutBundle({ root, devCommands, nowMs, id }),
    );
    return bundle ? pathToFileURL(bundle).href : source;
  } catch {
    return source;
  }
}
