import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The unit suite runs its files in shared worker processes (vitest's `isolate: false`): each worker
 * imports lib/ and client-node once instead of once a file (import time 131 s → 14 s, the unit run
 * 208 s → 116 s on 2 cores). A file that replaces a module (`vi.mock`, `vi.doMock`) cannot share: the
 * module another file of the same worker imported first is the one it gets. Those run isolated, in the
 * `unit-mocks` project; this finds them by their source, so a new such file needs no list.
 */
export const REPLACES_A_MODULE = /\bvi\.(mock|doMock)\(/;

/** The unit test files under `dirs` (relative to `root`) that replace a module, as paths relative to root. */
export function filesReplacingModules(root: string, dirs: readonly string[]): string[] {
  return dirs.flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => relative(root, join(root, dir, name)))
      .filter((path) => REPLACES_A_MODULE.test(readFileSync(join(root, path), 'utf8'))),
  );
}
