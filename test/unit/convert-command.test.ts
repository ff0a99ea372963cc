import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CONVERT_EXIT, type ConvertCommandOptions, convertCommand } from '../../lib/commands/convert.ts';
import { convertOptions } from '../../lib/config/convert-options.ts';
import type { JsonObject } from '../../lib/convert/field-path.ts';
import type { CheckKind } from '../../lib/convert/kinds.ts';
import type { ConvertKube } from '../../lib/convert/port.ts';

// The command body against a fake cluster: what is printed where, which exit code, and that --apply
// creates nothing unless every resource passed the dry run.

const KHCHECK = `apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: {name: c, namespace: ns}
spec:
  runInterval: 1m
  timeout: 2m
  podSpec: {containers: [{name: main, image: x}], restartPolicy: Never}
`;

/** A fake API server: stores creations, answers a dry run with `prune` applied, refuses names in `taken`. */
function fakeKube(
  opts: { prune?: (o: JsonObject) => JsonObject; taken?: string[]; items?: JsonObject[] } = {},
) {
  const created: { kind: CheckKind; dryRun: boolean; name: string }[] = [];
  const kube: ConvertKube = {
    get: async (_kind, _ns, name) =>
      opts.items?.find((i) => (i.metadata as { name: string }).name === name) ?? null,
    list: async () => opts.items ?? [],
    create: async (kind, resource, dryRun) => {
      const name = (resource.metadata as { name: string }).name;
      if (opts.taken?.includes(name))
        throw new ApiException(409, 'Conflict', JSON.stringify({ message: `"${name}" already exists` }), {});
      created.push({ kind, dryRun, name });
      return opts.prune ? opts.prune(structuredClone(resource)) : resource;
    },
  };
  return { kube, created };
}

async function run(
  over: Partial<ConvertCommandOptions>,
  files: Record<string, string> = { 'a.yaml': KHCHECK },
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await convertCommand({
    files: Object.keys(files),
    targets: [],
    scope: { namespace: 'ns' },
    output: 'yaml',
    apply: false,
    acceptLosses: false,
    cluster: undefined,
    readInput: async (p) => {
      if (files[p] === undefined) throw new Error('ENOENT');
      return files[p];
    },
    write: (l) => out.push(l),
    warn: (l) => err.push(l),
    ...over,
  });
  return { code, out: out.join('\n'), err };
}

describe('khrun convert, the command', () => {
  it('clean: the YAML on stdout, a summary on stderr, exit 0', async () => {
    const r = await run({});
    expect(r.code).toBe(CONVERT_EXIT.clean);
    expect(r.out).toMatch(/^apiVersion: kuberhealthy\.github\.io\/v2\nkind: HealthCheck\n/);
    expect(r.err).toEqual(['convert: converted 1']);
  });

  it('--apply: a dry run of every resource, then the creation; stdout shows what the server stored', async () => {
    const { kube, created } = fakeKube({
      prune: (o) => ({ ...o, metadata: { ...(o.metadata as object), uid: 'u1' } }),
    });
    const r = await run({ apply: true, output: 'json', cluster: { kube, namespace: 'ns' } });
    expect(created).toEqual([
      { kind: 'healthcheck', dryRun: true, name: 'c' },
      { kind: 'healthcheck', dryRun: false, name: 'c' },
    ]);
    expect(JSON.parse(r.out)).toMatchObject({ metadata: { uid: 'u1' } });
    expect(r.code).toBe(CONVERT_EXIT.clean);
  });

  it('--apply: a field the cluster’s CRD prunes is a loss; nothing is created without --accept-losses', async () => {
    const prune = (o: JsonObject) => {
      delete ((o.spec as JsonObject).podSpec as JsonObject).spec;
      return o;
    };
    const refused = fakeKube({ prune });
    const r = await run({ apply: true, cluster: { kube: refused.kube, namespace: 'ns' } });
    expect(r.err).toContain(
      "lost: HealthCheck ns/c (server-side dry run): spec.podSpec.spec: the cluster's CRD prunes it",
    );
    expect(refused.created.filter((c) => !c.dryRun)).toEqual([]);
    expect(r.code).toBe(CONVERT_EXIT.lossy);
    const accepted = fakeKube({ prune });
    const a = await run({
      apply: true,
      acceptLosses: true,
      cluster: { kube: accepted.kube, namespace: 'ns' },
    });
    expect(accepted.created.filter((c) => !c.dryRun)).toHaveLength(1);
    expect(a.code).toBe(CONVERT_EXIT.lossy);
  });

  it('--apply: one resource refused at the dry run means none is created (exit 1)', async () => {
    const two = `${KHCHECK}---\n${KHCHECK.replace('name: c,', 'name: d,')}`;
    const { kube, created } = fakeKube({ taken: ['d'] });
    const r = await run({ apply: true, cluster: { kube, namespace: 'ns' } }, { 'a.yaml': two });
    expect(r.err).toContain('refused: HealthCheck ns/d (server-side dry run): 409: "d" already exists');
    expect(created.filter((c) => !c.dryRun)).toEqual([]);
    expect(r.code).toBe(CONVERT_EXIT.failed);
  });

  it('bad input: exit 2 and nothing on stdout (unreadable file, missing resource)', async () => {
    const missing = await run({ files: ['nope.yaml'] });
    expect([missing.code, missing.out]).toEqual([CONVERT_EXIT.badInput, '']);
    expect(missing.err).toEqual([
      'convert: nope.yaml: cannot be read (ENOENT); give a readable file, or - for stdin',
    ]);
    const { kube } = fakeKube();
    const gone = await run({
      files: [],
      targets: [{ kind: 'khjob', name: 'j' }],
      cluster: { kube, namespace: 'ns' },
    });
    expect(gone.err).toEqual([
      'convert: khjob ns/j not found; list them with kubectl get khjobs.comcast.github.io -n ns',
    ]);
    expect([gone.code, gone.out]).toEqual([CONVERT_EXIT.badInput, '']);
  });
});

describe('khrun convert, the options', () => {
  const options = (
    positionals: string[],
    flags: Record<string, string | boolean> = {},
    files: string[] = [],
  ) => convertOptions({ flags, env: {}, positionals, files });

  it('files alone need no cluster', () => {
    expect(options([], {}, ['a.yaml', '-'])).toMatchObject({
      files: ['a.yaml', '-'],
      targets: [],
      kube: undefined,
      output: 'yaml',
    });
  });

  it.each([
    [[], [], {}, /nothing to convert/],
    [['khcheck/a'], [], { 'all-namespaces': true }, /a resource named by its name is in one namespace/],
    [['pods'], [], {}, /"pods": is not a resource convert reads/],
    [[], ['a.yaml'], { 'accept-losses': true }, /only means something with --apply/],
  ])('%j, files %j, flags %j: refused', (positionals, files, flags, message) => {
    expect(() => options(positionals, flags, files)).toThrow(message);
  });
});

describe('khrun convert, the command line', () => {
  it('-f repeats, and - is stdin, not a missing value', async () => {
    const { parseCommand } = await import('../../functions/cli/usage.ts');
    const { convert } = await import('../../functions/cli/convert.ts');
    const parsed = parseCommand(convert.spec, ['-f', 'a.yaml', 'khcheck/x', '-f', '-', '-n', 'ns']);
    expect(parsed).toMatchObject({
      kind: 'args',
      positionals: ['khcheck/x'],
      repeated: { filename: ['a.yaml', '-'] },
    });
    expect(() => parseCommand(convert.spec, ['-f', '-n'])).toThrow('flag -f/--filename needs a value (FILE)');
  });
});
