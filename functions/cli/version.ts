import { formatDocument } from '../../lib/commands/document.ts';
import { setting } from '../../lib/config/setting.ts';
import { oneOf } from '../../lib/config/values.ts';
import { EXIT } from '../../lib/core/exit-codes.ts';
// esbuild inlines the JSON into the bundle and tsx reads it from the checkout: both give the same version.
// A release checks the chart, the kustomization and the Dockerfile against it (docs/release.md).
import packageJson from '../../package.json' with { type: 'json' };
import type { CliCommand } from './context.ts';
import { COMMON_FLAGS } from './flags.ts';

/** khrun's version, as package.json gives it. */
export const KHRUN_VERSION: string = packageJson.version;

/**
 * Replaced by the source revision when a bundle is built with one (esbuild `define`, see
 * infra/devkit/src/build/revision.ts: the image's and the npm package's builds); no such global exists
 * otherwise (tsx, the checkout's bundle), which `typeof` tells without a ReferenceError.
 */
declare const KHRUN_REVISION: string | undefined;

/** The source revision the running build was made from (a git commit, `-dirty` if edited), if it knows. */
export const KHRUN_BUILD_REVISION: string | undefined =
  typeof KHRUN_REVISION === 'string' && KHRUN_REVISION !== '' ? KHRUN_REVISION : undefined;

/**
 * What `khrun version -o json|yaml` prints: khrun's version, the revision it was built from (only when the
 * build recorded one) and the Node.js running it.
 */
export interface VersionDocument {
  version: string;
  revision?: string;
  node: string;
}

/** The document of this build (pure given its inputs). */
export function versionDocument(revision: string | undefined, node: string): VersionDocument {
  return revision ? { version: KHRUN_VERSION, revision, node } : { version: KHRUN_VERSION, node };
}

/** `khrun 0.1.0 (revision 0123abc…, node v20.19.0)`, or without the revision when there is none. */
export function versionLine(doc: VersionDocument): string {
  const revision = doc.revision ? `revision ${doc.revision}, ` : '';
  return `khrun ${doc.version} (${revision}node ${doc.node})`;
}

/** `khrun version` (also `khrun --version`): the version of khrun and of Node.js; talks to no cluster. */
export const version: CliCommand = {
  spec: {
    name: 'version',
    summary: 'the khrun version and the Node.js version running it',
    description:
      'Prints `khrun VERSION (node vX.Y.Z)`, with `revision COMMIT, ` before node when the build recorded ' +
      'the commit it was made from (the image and the npm package do); -o json or -o yaml print only the ' +
      'document {version, revision, node} (revision only when known). The image carries the same version ' +
      'and revision as its OCI labels org.opencontainers.image.version and .revision.',
    examples: [
      {
        what: "khrun's version and Node.js's",
        line: 'khrun version',
      },
      {
        what: 'the same as JSON, for a script',
        line: 'khrun version -o json',
      },
    ],
    flags: {
      output: {
        ...COMMON_FLAGS.output,
        value: 'json|yaml',
        values: ['json', 'yaml'],
        help: 'json or yaml: the document {version, revision, node}',
      },
      help: COMMON_FLAGS.help,
    },
  },
  async run({ values }, ctx) {
    const output = oneOf(
      setting({ flags: values, env: {} }, { flags: ['output'] }),
      ['text', 'json', 'yaml'],
      'text',
    );
    const doc = versionDocument(KHRUN_BUILD_REVISION, process.version);
    ctx.write(output === 'text' ? versionLine(doc) : formatDocument(doc, output));
    return EXIT.ok;
  },
};
