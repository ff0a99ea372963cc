import { formatDocument } from '../../lib/commands/document.ts';
import { setting } from '../../lib/config/setting.ts';
import { oneOf } from '../../lib/config/values.ts';
import { EXIT } from '../../lib/core/exit-codes.ts';
// esbuild inlines the JSON into the bundle and tsx reads it from the checkout: both give the same version,
// and a release changes it in package.json alone.
import packageJson from '../../package.json' with { type: 'json' };
import type { CliCommand } from './context.ts';
import { COMMON_FLAGS } from './flags.ts';

/** khrun's version, as package.json gives it. */
export const KHRUN_VERSION: string = packageJson.version;

/** What `khrun version -o json|yaml` prints: khrun's version and the Node.js running it. */
export interface VersionDocument {
  version: string;
  node: string;
}

/** `khrun version` (also `khrun --version`): the version of khrun and of Node.js; talks to no cluster. */
export const version: CliCommand = {
  spec: {
    name: 'version',
    summary: 'the khrun version and the Node.js version running it',
    description:
      'Prints `khrun VERSION (node vX.Y.Z)`; -o json or -o yaml print only the document {version, node}.',
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
        help: 'json or yaml: the document {version, node}',
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
    const doc: VersionDocument = { version: KHRUN_VERSION, node: process.version };
    ctx.write(output === 'text' ? `khrun ${doc.version} (node ${doc.node})` : formatDocument(doc, output));
    return EXIT.ok;
  },
};
