import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { validateCommand } from '../../lib/commands/validate.ts';
import { setting } from '../../lib/config/setting.ts';
import { oneOf } from '../../lib/config/values.ts';
import type { CliCommand } from './context.ts';
import { COMMON_FLAGS } from './flags.ts';
import { UsageError } from './usage.ts';

/** `khrun validate -f FILE...`: khchecks, khjobs and HealthCheck files checked offline. */
export const validate: CliCommand = {
  spec: {
    name: 'validate',
    synopsis: '-f FILE...',
    summary: 'check khcheck, khjob and HealthCheck files offline, as the runner would, plus pod-spec sanity',
    description:
      'Reads each file (YAML or JSON, several documents, Lists; - for stdin) and checks every ' +
      'KuberhealthyCheck, KuberhealthyJob and HealthCheck in it without a cluster: the validation the runner ' +
      'applies before a run (durations, pod spec, label maps), plus what the API server or the kubelet would ' +
      'refuse in the checker pod (a container without a name or an image, an unknown imagePullPolicy or ' +
      'restartPolicy, duplicate container names, bad resource quantities or requests above limits, bad env ' +
      'names, command or args that are not lists of strings) and a name the checker pod can carry. Other ' +
      'kinds are not checked. Every problem names its file, document, object and field. Exit 0: every check ' +
      'valid (warnings allowed); 1: one is invalid; 2: usage, or a file that cannot be read.',
    examples: [
      { what: 'check a file of khchecks before applying it', line: 'khrun validate -f checks.yaml' },
      {
        what: 'several files, the report as JSON for a script (exit 1 when one is invalid)',
        line: 'khrun validate -f checks.yaml -f healthchecks.yaml -o json',
      },
      {
        what: 'the checks a kustomization renders',
        line: 'kubectl kustomize overlays/prod | khrun validate -f -',
      },
    ],
    flags: {
      filename: {
        type: 'string',
        short: 'f',
        value: 'FILE',
        help: 'a file to validate (repeatable; - for stdin)',
        complete: 'file',
        repeatable: true,
      },
      output: {
        ...COMMON_FLAGS.output,
        value: 'json|yaml',
        values: ['json', 'yaml'],
        help: 'the report as one document {valid, checks, skipped, documents} (default: a line per problem)',
      },
      help: COMMON_FLAGS.help,
    },
  },
  async run({ values, repeated }, ctx) {
    const output = oneOf(
      setting({ flags: values, env: {} }, { flags: ['output'] }),
      ['text', 'json', 'yaml'],
      'text',
    );
    const files = repeated?.filename ?? [];
    if (files.length === 0)
      throw new UsageError('validate: give the files to check with -f FILE (- for stdin)', 'validate');
    if (files.filter((f) => f === '-').length > 1)
      throw new UsageError('validate: -f - (stdin) can be given once', 'validate');
    return validateCommand({
      files,
      output,
      readInput: (path) => (path === '-' ? text(process.stdin) : readFile(path, 'utf8')),
      write: ctx.write,
      warn: ctx.warn,
    });
  },
};
