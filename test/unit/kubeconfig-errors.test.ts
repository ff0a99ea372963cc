import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CliContext } from '../../functions/cli/context.ts';
import { main } from '../../functions/cli/main.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { cliKube } from '../../lib/config/kubeconfig.ts';
import { KubeconfigError, KubeconfigProblem } from '../../lib/kube/kubeconfig-error.ts';
import { loadKubeConfig } from '../../lib/kube/load-config.ts';

// A kubeconfig khrun cannot use says which file, what is wrong with it and what to do, instead of
// client-node's "Cannot read properties of undefined (reading 'clusters')" for /dev/null.

const dir = mkdtempSync(join(tmpdir(), 'khrun-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const CLUSTER =
  'clusters: [{name: c, cluster: {server: "https://192.0.2.1:6443", certificate-authority: ca.crt}}]';
const USER = 'users: [{name: u, user: {token: t}}]';
const CONTEXT = 'contexts: [{name: ctx, context: {cluster: c, user: u}}]';
const good = file('good', [CLUSTER, USER, CONTEXT, 'current-context: ctx'].join('\n'));

/** The ConfigError cliKube throws for these flags. */
function configError(flags: { kubeconfig?: string; context?: string }): ConfigError {
  try {
    cliKube({ flags, env: {} });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('cliKube accepted it');
}

describe('a kubeconfig that cannot be used', () => {
  it.each([
    [
      '/dev/null',
      () => '/dev/null',
      KubeconfigProblem.Empty,
      'the file is empty',
      /clusters, users, contexts/,
    ],
    [
      'an empty file',
      () => file('empty', '\n# nothing\n'),
      KubeconfigProblem.Empty,
      'the file is empty',
      /--kubeconfig or KUBECONFIG/,
    ],
    [
      'a missing file',
      () => join(dir, 'nope'),
      KubeconfigProblem.Missing,
      'the file does not exist',
      /check the path/,
    ],
    [
      'a directory',
      () => {
        mkdirSync(join(dir, 'adir'), { recursive: true });
        return join(dir, 'adir');
      },
      KubeconfigProblem.Unreadable,
      'the file is a directory',
      /check the path/,
    ],
    [
      'text that is not YAML',
      () => file('bad', 'clusters: [{name: c'),
      KubeconfigProblem.NotYaml,
      /^the file is not YAML: .* \(line \d+, column \d+\)$/,
      /fix the file/,
    ],
    [
      'YAML that is not a mapping',
      () => file('list', '- a\n- b\n'),
      KubeconfigProblem.NotAKubeconfig,
      /is not a kubeconfig: YAML, but a list/,
      /--kubeconfig/,
    ],
    [
      'a cluster without a server',
      () => file('noserver', 'clusters: [{name: c, cluster: {}}]\n'),
      KubeconfigProblem.Invalid,
      'the file is not a valid kubeconfig: clusters[0].cluster.server is missing',
      /fix the entry/,
    ],
    [
      'only apiVersion and kind',
      () => file('bare', 'apiVersion: v1\nkind: Config\n'),
      KubeconfigProblem.NoClusters,
      'the file has no clusters, contexts or current-context',
      /kubectl config set-cluster NAME --server URL --kubeconfig .*bare/,
    ],
    [
      'clusters but no contexts',
      () => file('noctx', [CLUSTER, USER, 'current-context: ctx'].join('\n')),
      KubeconfigProblem.NoContexts,
      'the file has no contexts',
      /kubectl config set-context NAME --cluster CLUSTER --user USER/,
    ],
    [
      'contexts but no current-context',
      () => file('nocurrent', [CLUSTER, USER, CONTEXT].join('\n')),
      KubeconfigProblem.NoCurrentContext,
      'the file has no current-context (its contexts: ctx)',
      /^give --context NAME, or set one \(kubectl config use-context NAME --kubeconfig .*nocurrent\)$/,
    ],
    [
      'a current-context that is not there',
      () => file('wrongcurrent', [CLUSTER, USER, CONTEXT, 'current-context: other'].join('\n')),
      KubeconfigProblem.UnknownCurrentContext,
      'the file names current-context "other", which is not among its contexts (ctx)',
      /kubectl config use-context NAME/,
    ],
    [
      'a context whose cluster is not there',
      () =>
        file(
          'wrongcluster',
          [
            CLUSTER,
            USER,
            'contexts: [{name: ctx, context: {cluster: gone, user: u}}]',
            'current-context: ctx',
          ].join('\n'),
        ),
      KubeconfigProblem.UnknownCluster,
      'the file has context "ctx" naming cluster "gone", which is not among its clusters',
      /add the cluster/,
    ],
  ])('%s: a ConfigError saying what is wrong and what to do', (_, pathOf, problem, said, remedy) => {
    const path = pathOf();
    const error = configError({ kubeconfig: path });
    expect(error.setting).toBe('--kubeconfig');
    expect(error.value).toBe(path);
    expect(error.problem).toMatch(/^cannot be used: /);
    const detail = error.problem.replace(/^cannot be used: /, '');
    if (typeof said === 'string') expect(detail).toBe(said);
    else expect(detail).toMatch(said);
    expect(error.remedy).toMatch(remedy);
    expect(error.message).not.toMatch(/Cannot read properties|undefined/);
    // The cause is typed, for a caller that is not the CLI (a Lambda handler's kubeconfig).
    expect(error.cause).toBeInstanceOf(KubeconfigError);
    expect(error.cause).toMatchObject({ problem, file: path });
  });

  it('in a KUBECONFIG list, the message names the file at fault', () => {
    const missing = join(dir, 'missing-in-list');
    const error = configError({ kubeconfig: [good, missing].join(delimiter) });
    expect(error.problem).toBe(`cannot be used: ${missing} does not exist`);
    const merged = configError({
      kubeconfig: [file('a', 'apiVersion: v1\n'), file('b', 'kind: Config\n')].join(delimiter),
    });
    expect(merged.problem).toBe(
      'cannot be used: the kubeconfig has no clusters, contexts or current-context',
    );
  });

  it('--context stands in for a missing current-context; an unknown one is named', () => {
    const noCurrent = file('nocurrent2', [CLUSTER, USER, CONTEXT].join('\n'));
    expect(
      cliKube({ flags: { kubeconfig: noCurrent, context: 'ctx' }, env: {} }).kc.getCurrentContext(),
    ).toBe('ctx');
    expect(configError({ kubeconfig: good, context: 'nope' }).message).toBe(
      '--context="nope": the kubeconfig has no context "nope"; pick one of `kubectl config get-contexts`',
    );
  });

  it('a good file loads as before: relative certificate paths taken from its directory', () => {
    const kc = loadKubeConfig({ kubeconfig: good });
    expect(kc.getCurrentCluster()).toMatchObject({
      server: 'https://192.0.2.1:6443',
      caFile: join(dir, 'ca.crt'),
    });
  });

  it('the CLI: `khrun status --kubeconfig /dev/null` is exit 2, one message and the hint, nothing on stdout', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const ctx: CliContext = {
      root: dir,
      env: {},
      write: (line) => out.push(line),
      warn: (line) => err.push(line),
    };
    const code = await main(['status', '--kubeconfig', '/dev/null', '-o', 'json'], ctx, async () => {
      throw new Error('no developer command here');
    });
    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err.join('\n').split('\n')).toEqual([
      expect.stringMatching(/^khrun: --kubeconfig="\/dev\/null": cannot be used: the file is empty; /),
      "See 'khrun status --help' for usage.",
    ]);
  });
});
