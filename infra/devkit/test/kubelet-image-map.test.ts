import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  containerArgv,
  type ImageMapEntry,
  loadImageMapFile,
  lookupImage,
  parseImageMap,
} from '../src/local/kubelet/image-map.ts';
import {
  dockerfileCommand,
  KHRUN_IMAGE,
  KHRUN_LOCAL_IMAGE,
  khrunImageEntries,
} from '../src/local/kubelet/khrun-image.ts';

const root = resolve(import.meta.dirname, '../../..');
const entry = (image: string, entrypoint: string[], cmd: string[] = []): ImageMapEntry => ({
  image,
  entrypoint,
  cmd,
});

describe('lookupImage: which entry an image reference uses', () => {
  const map = [
    entry('busybox', ['/bin/any-busybox']),
    entry('busybox:1.36', ['/bin/busybox-1.36']),
    entry(`ghcr.io/acme/app@sha256:${'a'.repeat(64)}`, ['/bin/pinned']),
    entry('ghcr.io/acme/app:latest', ['/bin/latest']),
    entry('localhost:5000/team/app', ['/bin/local']),
  ];

  it.each([
    ['busybox', '/bin/any-busybox'],
    ['busybox:1.37', '/bin/any-busybox'],
    ['busybox:1.36', '/bin/busybox-1.36'],
    ['docker.io/library/busybox:1.36', '/bin/busybox-1.36'],
    ['library/busybox:1.36', '/bin/busybox-1.36'],
    ['index.docker.io/library/busybox', '/bin/any-busybox'],
    [`ghcr.io/acme/app@sha256:${'a'.repeat(64)}`, '/bin/pinned'],
    ['ghcr.io/acme/app', '/bin/latest'], // no tag is :latest
    ['localhost:5000/team/app:v2', '/bin/local'],
  ])('%s → %s', (image, expected) => {
    expect(lookupImage(map, image)?.entrypoint).toEqual([expected]);
  });

  it.each([
    'ghcr.io/acme/app:v1',
    `ghcr.io/acme/app@sha256:${'b'.repeat(64)}`,
    'quay.io/busybox',
    'busybox2',
    'Not A Reference',
  ])('%s matches nothing', (image) => {
    expect(lookupImage(map, image)).toBeUndefined();
  });

  it('takes the first of two entries of the same kind (explicit entries come before the built-in)', () => {
    expect(
      lookupImage([entry('khrun', ['mine']), entry('khrun', ['builtin'])], 'khrun:0.1.0')?.entrypoint,
    ).toEqual(['mine']);
  });
});

describe('containerArgv: command and args over the image ENTRYPOINT and CMD', () => {
  const map = [entry('app', ['/bin/app', '--flag'], ['help'])];

  it.each([
    ['command only: the image CMD is dropped', { command: ['/bin/sh'] }, ['/bin/sh']],
    ['command and args', { command: ['/bin/sh'], args: ['-c', 'true'] }, ['/bin/sh', '-c', 'true']],
    ['args replace the CMD', { args: ['run', '--once'] }, ['/bin/app', '--flag', 'run', '--once']],
    ['neither: ENTRYPOINT + CMD', {}, ['/bin/app', '--flag', 'help']],
    ['empty args replace the CMD too', { args: [] }, ['/bin/app', '--flag']],
  ])('%s', (_what, spec, argv) => {
    expect(containerArgv({ image: 'app:1', ...spec }, map)).toEqual({ ok: true, argv, requires: [] });
  });

  it('an image that is not mapped, without command: CreateContainerError saying what to do', () => {
    const result = containerArgv({ image: 'other:1', args: ['x'] }, map);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toMatch(/^no command specified: image "other:1" is not in the .* image map/);
      expect(result.message).toContain('--image-map FILE');
    }
  });

  it('a command of its own needs no map entry', () => {
    expect(containerArgv({ image: 'other:1', command: ['true'] }, []).ok).toBe(true);
  });

  it('a command naming a program inside the image runs its local build (`command: [/app/kuberhealthy]`)', () => {
    const daemon = {
      ...entry('kuberhealthy/kuberhealthy', ['/cache/kuberhealthy']),
      programs: { '/app/kuberhealthy': '/cache/kuberhealthy' },
    };
    expect(
      containerArgv(
        { image: 'kuberhealthy/kuberhealthy:v2.7.0', command: ['/app/kuberhealthy'], args: ['-c', 'x'] },
        [daemon],
      ),
    ).toEqual({
      ok: true,
      argv: ['/cache/kuberhealthy', '-c', 'x'],
      requires: [],
    });
    // Another image's container naming the same path runs it as written.
    expect(containerArgv({ image: 'other:1', command: ['/app/kuberhealthy'] }, [daemon])).toMatchObject({
      argv: ['/app/kuberhealthy'],
    });
  });

  it('passes the files the image command needs through', () => {
    const needs = [{ path: '/x/dist/khrun.mjs', message: 'run npm run build' }];
    const result = containerArgv({ image: 'khrun:0.1.0' }, [
      { ...entry('khrun', ['node']), requires: needs },
    ]);
    expect(result).toEqual({ ok: true, argv: ['node'], requires: needs });
  });
});

describe('image-map files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'khrun-image-map-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads YAML: the entrypoint shorthand, entrypoint + cmd, relative paths from the file', async () => {
    const file = join(dir, 'maps', 'images.yaml');
    await mkdir(join(dir, 'maps'), { recursive: true });
    await writeFile(
      file,
      [
        'images:',
        '  registry.example.com/net-check: [/usr/local/bin/net-check]',
        '  "ghcr.io/acme/disk-check:1.4":',
        '    entrypoint: [node, ./disk-check/index.mjs]',
        '    cmd: [--once, ../data]',
        '  only-cmd:',
        '    cmd: [sh, -c, "echo hi"]',
      ].join('\n'),
    );
    expect(await loadImageMapFile(file)).toEqual([
      { image: 'registry.example.com/net-check', entrypoint: ['/usr/local/bin/net-check'], cmd: [] },
      {
        image: 'ghcr.io/acme/disk-check:1.4',
        entrypoint: ['node', join(dir, 'maps/disk-check/index.mjs')],
        cmd: ['--once', join(dir, 'data')],
      },
      { image: 'only-cmd', entrypoint: [], cmd: ['sh', '-c', 'echo hi'] },
    ]);
  });

  it('reads JSON', async () => {
    const file = join(dir, 'images.json');
    await writeFile(file, JSON.stringify({ images: { busybox: ['/bin/busybox', 'sh'] } }));
    expect(await loadImageMapFile(file)).toEqual([
      { image: 'busybox', entrypoint: ['/bin/busybox', 'sh'], cmd: [] },
    ]);
  });

  it.each([
    [[], /expected a mapping with the key "images"/],
    [{ image: {} }, /unknown key "image" \(the only key is "images"\)/],
    [{ images: ['busybox'] }, /"images" must map image references to commands/],
    [{ images: { 'Bad Name': ['x'] } }, /"Bad Name" is not a valid image reference/],
    [{ images: { app: [] } }, /"app": the command is empty/],
    [{ images: { app: 'sh -c x' } }, /"app": expected a list of strings/],
    [{ images: { app: { entrypoint: 'x' } } }, /"app": entrypoint and cmd must be lists of strings/],
    [{ images: { app: { command: ['x'] } } }, /"app": unknown key "command" \(use entrypoint and cmd\)/],
    [{ images: { app: { entrypoint: [], cmd: [] } } }, /"app": entrypoint and cmd are both empty/],
  ])('rejects %j naming the problem', (doc, message) => {
    expect(() => parseImageMap(doc, 'images.yaml', dir)).toThrow(message);
  });

  it('says when the file cannot be read or parsed', async () => {
    await expect(loadImageMapFile(join(dir, 'missing.yaml'))).rejects.toThrow(
      /missing\.yaml: cannot read it/,
    );
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'images: [unclosed');
    await expect(loadImageMapFile(bad)).rejects.toThrow(/bad\.yaml: not valid YAML or JSON/);
  });
});

describe("khrun's own image", () => {
  it('parses the exec-form ENTRYPOINT and CMD of a Dockerfile (the last of each)', () => {
    const dockerfile =
      'FROM x\nENTRYPOINT ["a"]\nCMD ["b"]\nENTRYPOINT ["/sbin/tini", "--", "node", "/app/dist/x.mjs"]\n';
    expect(dockerfileCommand(dockerfile)).toEqual({
      entrypoint: ['/sbin/tini', '--', 'node', '/app/dist/x.mjs'],
      cmd: ['b'],
    });
    expect(() => dockerfileCommand('FROM x\nCMD ["b"]\n')).toThrow(/no ENTRYPOINT/);
    expect(() => dockerfileCommand('FROM x\nENTRYPOINT node x.mjs\n')).toThrow(/not in exec form/);
  });

  it("runs the image's ENTRYPOINT from infra/image/Dockerfile as this Node and the local dist/", async () => {
    const dockerfile = await readFile(join(root, 'infra/image/Dockerfile'), 'utf8');
    const image = dockerfileCommand(dockerfile);
    const entries = await khrunImageEntries({ root });
    expect(entries.map((e) => e.image)).toEqual([KHRUN_IMAGE, KHRUN_LOCAL_IMAGE]);
    const [built, local] = entries as [ImageMapEntry, ImageMapEntry];
    expect({ ...local, image: KHRUN_IMAGE }).toEqual(built);
    // tini dropped, node → this Node, /app/dist/ → <repo>/dist/, everything else as the image has it.
    const expected = image.entrypoint
      .slice(image.entrypoint[0]?.endsWith('/tini') ? 2 : 0)
      .map((a) => (a === 'node' ? process.execPath : a.replace(/^\/app\/dist\//, `${join(root, 'dist')}/`)));
    expect(built.entrypoint).toEqual(expected);
    expect(built.entrypoint).toContain(join(root, 'dist/khrun.mjs'));
    expect(built.cmd).toEqual(image.cmd);
    expect(built.requires).toEqual([
      {
        path: join(root, 'dist/khrun.mjs'),
        message: expect.stringMatching(/dist\/khrun\.mjs does not exist: .*run npm run build/),
      },
    ]);
  });

  it('maps /app/dist to another directory when asked (the tests run their own build)', async () => {
    const [built] = await khrunImageEntries({ root, distDir: '/tmp/elsewhere' });
    if (!built) throw new Error('no entry');
    expect(built.entrypoint).toContain('/tmp/elsewhere/khrun.mjs');
    expect(built.requires?.[0]?.path).toBe('/tmp/elsewhere/khrun.mjs');
  });

  it('every image the kustomization and the chart render, and the short name, find it', async () => {
    const map = await khrunImageEntries({ root });
    const rendered: string[] = [];
    for (const file of [
      'infra/deploy/runner.yaml',
      'infra/deploy/tick.yaml',
      'infra/deploy/components/serve/serve.yaml',
      'infra/deploy/components/sync/sync.yaml',
    ]) {
      const text = await readFile(join(root, file), 'utf8');
      rendered.push(...[...text.matchAll(/^\s+image: (\S+)$/gm)].map((m) => m[1]!));
    }
    expect(rendered.length).toBeGreaterThanOrEqual(4);
    for (const image of [
      ...rendered,
      KHRUN_IMAGE,
      `${KHRUN_IMAGE}:1.2.3-rc.1`,
      `${KHRUN_IMAGE}@sha256:${'c'.repeat(64)}`,
    ])
      expect(lookupImage(map, image)?.image, image).toBe(KHRUN_IMAGE);
    for (const image of [
      'khrun',
      'khrun:0.1.0',
      'docker.io/library/khrun:0.1.0',
      `khrun@sha256:${'c'.repeat(64)}`,
    ])
      expect(lookupImage(map, image)?.image, image).toBe(KHRUN_LOCAL_IMAGE);
    // Another registry's copy is someone else's image: not the local build.
    expect(lookupImage(map, 'registry.example.com/khrun/khrun:0.1.0')).toBeUndefined();
  });

  it("is the repository the chart's values and the kustomization's images name", async () => {
    const values = parseYaml(await readFile(join(root, 'infra/helm/khrun/values.yaml'), 'utf8')) as {
      image: { repository: string };
    };
    expect(values.image.repository).toBe(KHRUN_IMAGE);
    const kustomization = parseYaml(
      await readFile(join(root, 'infra/deploy/kustomization.yaml'), 'utf8'),
    ) as {
      images: Array<{ name: string }>;
    };
    expect(kustomization.images.map((i) => i.name)).toEqual([KHRUN_IMAGE]);
  });
});
