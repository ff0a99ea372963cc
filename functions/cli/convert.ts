import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { CONVERT_EXIT, convertCommand } from '../../lib/commands/convert.ts';
import { convertOptions } from '../../lib/config/convert-options.ts';
import { convertKube } from '../../lib/convert/convert-kube.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import type { CliCommand } from './context.ts';
import { COMMON_FLAGS } from './flags.ts';

/** `khrun convert`: khchecks and khjobs to v3 HealthCheck resources and back. */
export const convert: CliCommand = {
  spec: {
    name: 'convert',
    args: '[TYPE[/NAME]]...',
    completeArgs: ['khchecks', 'khjobs', 'healthchecks'],
    synopsis: '[-f FILE]...',
    summary: 'khchecks and khjobs to Kuberhealthy v3 HealthChecks and back, from files or the cluster',
    description:
      'Converts each KuberhealthyCheck and KuberhealthyJob (v2) into a HealthCheck (kuberhealthy.github.io/v2) ' +
      'and each HealthCheck into a khcheck, or a khjob when it is singleRunOnly. Input: -f FILE (repeatable; ' +
      '- for stdin; YAML or JSON, several documents, Lists), and resources from the cluster: khchecks, ' +
      'khjobs or healthchecks, TYPE/NAME or TYPE NAME... in -n NS (or every namespace with -A). Other kinds in ' +
      'a file are copied as they are; khstates are dropped. stdout: the result (YAML documents, or -o json); ' +
      'stderr: one line per field not carried over as it was (lost, defaulted, changed, moved, note) and why. ' +
      '--apply creates the converted resources (a server-side dry run of all of them first; never replaces ' +
      'one) and leaves the originals alone. Exit 0: converted cleanly; 3: with losses (with --apply: nothing ' +
      'created unless --accept-losses); 2: bad input, nothing written; 1: the cluster failed or refused.',
    examples: [
      {
        what: 'khchecks from a file to HealthChecks, on stdout; losses on stderr',
        line: 'khrun convert -f checks.yaml',
      },
      {
        what: 'every khcheck of a namespace, read from the cluster, as JSON',
        line: 'khrun convert khchecks -n checks -o json',
      },
      {
        what: 'what kubectl prints, back to v2',
        line: 'kubectl get healthchecks -A -o yaml | khrun convert -f -',
      },
      {
        what: 'create the HealthChecks in the cluster (a server-side dry run of all first)',
        line: 'khrun convert -f checks.yaml --apply -n checks',
      },
    ],
    flags: {
      filename: {
        type: 'string',
        short: 'f',
        value: 'FILE',
        help: 'a file to convert (repeatable; - for stdin)',
        complete: 'file',
        repeatable: true,
      },
      apply: {
        type: 'boolean',
        help: 'create the converted resources in the cluster (after a server-side dry run of all)',
      },
      'accept-losses': { type: 'boolean', help: 'with --apply: create them even when fields were lost' },
      namespace: {
        ...COMMON_FLAGS.namespace,
        help: "where named resources are read, and where resources that name none are created (else the kubeconfig context's, else default)",
      },
      'all-namespaces': {
        ...COMMON_FLAGS['all-namespaces'],
        help: 'read the named types from every namespace',
      },
      kubeconfig: COMMON_FLAGS.kubeconfig,
      context: COMMON_FLAGS.context,
      output: {
        ...COMMON_FLAGS.output,
        value: 'json|yaml',
        values: ['json', 'yaml'],
        help: 'the result as JSON, or YAML documents (the default)',
      },
      help: COMMON_FLAGS.help,
    },
    env: ['KUBECONFIG'],
  },
  async run({ values, positionals, repeated }, ctx) {
    const options = convertOptions({
      flags: values,
      env: ctx.env,
      positionals,
      files: repeated?.filename ?? [],
    });
    if (options.files.filter((f) => f === '-').length > 1) {
      ctx.warn('khrun: -f - (stdin) can be given once');
      return CONVERT_EXIT.badInput;
    }
    return convertCommand({
      ...options,
      cluster: options.kube && {
        kube: convertKube(kubeClient(options.kube.kc)),
        namespace: options.kube.namespace,
      },
      readInput: (path) => (path === '-' ? text(process.stdin) : readFile(path, 'utf8')),
      write: ctx.write,
      warn: ctx.warn,
    });
  },
};
