import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/config/config-error.ts';
import { checkoutRevision, REVISION_PATTERN, revisionOf } from '../src/build/revision.ts';
import { buildOptions } from '../src/dev-options.ts';

// The revision `khrun build` compiles in: the checkout's commit (marked -dirty when tracked files differ),
// or what --revision says (the image's build passes its REVISION build argument; '' for none).

const root = resolve(import.meta.dirname, '../../..');
const SHA = 'a'.repeat(40);

describe('revisionOf', () => {
  it.each([
    ['a clean tree: the commit', `${SHA}\n`, '', SHA],
    ['edited tracked files: the commit, -dirty', SHA, ' M lib/x.ts\n', `${SHA}-dirty`],
    ['a SHA-256 repository', `${'b'.repeat(64)}\n`, '', 'b'.repeat(64)],
    ['not a commit id: none', 'HEAD\n', '', undefined],
    ['nothing: none', '', '', undefined],
  ])('%s', (_, head, status, expected) => {
    expect(revisionOf(head, status)).toBe(expected);
  });

  it('every revision it makes passes the flag check', () => {
    for (const r of [SHA, `${SHA}-dirty`, 'b'.repeat(64)]) expect(REVISION_PATTERN.test(r), r).toBe(true);
  });
});

describe('checkoutRevision', () => {
  it("is this checkout's HEAD, -dirty exactly when git says tracked files differ", async () => {
    const git = async (...args: string[]) =>
      (await promisify(execFile)('git', ['-C', root, ...args])).stdout.trim();
    const head = await git('rev-parse', 'HEAD');
    const dirty = (await git('status', '--porcelain', '--untracked-files=no')) !== '';
    expect(await checkoutRevision(root)).toBe(dirty ? `${head}-dirty` : head);
  });

  it('is undefined outside a git checkout', async () => {
    expect(await checkoutRevision('/proc')).toBeUndefined();
  });
});

describe('khrun build --revision', () => {
  const options = (flags: { revision?: string }) => buildOptions({ flags, env: {}, root });

  it('takes a commit id, or "" for none; without the flag the build asks git (undefined here)', () => {
    expect(options({ revision: SHA }).revision).toBe(SHA);
    expect(options({ revision: 'v1.2.3+build.4' }).revision).toBe('v1.2.3+build.4');
    expect(options({ revision: '' }).revision).toBe('');
    expect(options({}).revision).toBeUndefined();
  });

  it.each([['has space'], ['-starts-with-dash'], ['x'.repeat(65)], ['quote"']])(
    'refuses %j, naming the flag and what to pass',
    (revision) => {
      expect(() => options({ revision })).toThrow(ConfigError);
      expect(() => options({ revision })).toThrow(/^--revision=.*: must be a commit id .*git rev-parse HEAD/);
    },
  );
});
