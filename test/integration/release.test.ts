import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { checkoutRevision } from '@khrun/devkit/build/revision.ts';
import { resolveActionlint } from '@khrun/devkit/local/actionlint.ts';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { kubectl, SHIPPED_IMAGE } from './helpers/deploy.ts';
import { createCheck, nodeContainer, npmClientEnv, outcomeOf, readState, repoRoot } from './helpers/khrun.ts';
import { ensureShellcheck } from './helpers/shellcheck.ts';

// What a release ships, tried as its users meet it: the workflows that publish it pass the real actionlint
// (with shellcheck on their scripts); the kustomization runs the published image and lets a user point it
// at a mirror; the npm package, packed and installed outside the clone, runs khrun against the cluster.

const run = promisify(execFile);
const cacheDir =
  process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');

/** Runs a program; its exit code, stdout and stderr whatever the code. */
async function exec(
  file: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: opts.cwd,
      env: opts.env,
      timeout: opts.timeoutMs ?? 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    if (typeof e.code !== 'number') throw error;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message };
  }
}

interface Finding {
  kind: string;
  message: string;
  filepath: string;
  line: number;
}

describe('the workflows (.github/workflows), linted by actionlint with shellcheck', () => {
  let actionlint: string;
  let shellcheck: string;
  const lint = async (cwd: string, files: string[]) => {
    const out = await exec(
      actionlint,
      ['-shellcheck', shellcheck, '-pyflakes=', '-format', '{{json .}}', ...files],
      { cwd },
    );
    if (out.code > 1) throw new Error(`actionlint failed (exit ${out.code}): ${out.stderr}`);
    return JSON.parse(out.stdout || '[]') as Finding[];
  };

  beforeAll(async () => {
    // Built from the Go module proxy through infra/build/actionlint the first time (about 30 s), then cached.
    actionlint = await resolveActionlint({
      cacheDir,
      buildDir: join(repoRoot, 'infra/build'),
      onProgress: (line) => console.log(`[actionlint] ${line}`),
    });
    shellcheck = await ensureShellcheck();
  }, 900_000);

  it('finds nothing in any workflow', async () => {
    const dir = join(repoRoot, '.github/workflows');
    const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).map((f) => join(dir, f));
    expect(files.map((f) => relative(repoRoot, f)).sort()).toEqual([
      '.github/workflows/ci.yml',
      '.github/workflows/release.yml',
    ]);
    const findings = await lint(repoRoot, files);
    expect(
      findings.map((f) => `${relative(repoRoot, f.filepath)}:${f.line}: [${f.kind}] ${f.message}`),
    ).toEqual([]);
  });

  it("reports a workflow's mistakes, shellcheck's among them (the lint above can fail)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'khrun-actionlint-'));
    try {
      const file = join(dir, 'bad.yml');
      await writeFile(
        file,
        [
          'name: bad',
          'on: push',
          'jobs:',
          '  x:',
          '    runs-on: ubuntu-24.04',
          '    steps:',
          '      - uses: actions/checkout@v4',
          '        with: { fetch-dept: 1 }',
          '      - run: rm -rf $DIR/*',
          `      - run: echo "${'$'}{{ needs.nothing.outputs.x }}"`,
          '',
        ].join('\n'),
      );
      const kinds = (await lint(dir, [file])).map((f) => f.kind);
      expect(new Set(kinds)).toEqual(new Set(['action', 'shellcheck', 'expression']));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** The image of every container and init container in a YAML stream. */
function imagesOf(yaml: string): string[] {
  const images: string[] = [];
  const walk = (value: unknown, key?: string) => {
    if (Array.isArray(value)) {
      if (key === 'containers' || key === 'initContainers')
        for (const c of value as Array<{ image?: string }>) images.push(c.image ?? '(none)');
      else for (const v of value) walk(v);
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, k);
    }
  };
  for (const doc of loadAll(yaml)) walk(doc);
  return images;
}

describe("the kustomization's image", () => {
  let dir: string;
  beforeAll(async () => {
    await mkdir(join(repoRoot, '.khrun/test-overlays'), { recursive: true });
    dir = await mkdtemp(join(repoRoot, '.khrun/test-overlays/image-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const overlay = async (extra: string[]) => {
    const rel = (p: string) => relative(dir, join(repoRoot, p));
    await writeFile(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${rel('infra/deploy')}`,
        'components:',
        `  - ${rel('infra/deploy/components/serve')}`,
        `  - ${rel('infra/deploy/components/sync')}`,
        ...extra,
        '',
      ].join('\n'),
    );
    return imagesOf(await kubectl(['kustomize', dir]));
  };

  it('is the published repository at the package version, in every container of every component', async () => {
    const images = await overlay([]);
    expect(images.length).toBeGreaterThanOrEqual(3);
    expect(new Set(images)).toEqual(new Set([SHIPPED_IMAGE]));
    expect(SHIPPED_IMAGE).toBe(`ghcr.io/khrun/khrun:${packageJson.version}`);
  });

  it('is replaced everywhere by an images entry, as `kustomize edit set image` writes it (a mirror)', async () => {
    const images = await overlay([
      'images:',
      '  - name: ghcr.io/khrun/khrun',
      '    newName: registry.example.com/mirror/khrun',
      '    newTag: 9.9.9',
    ]);
    expect(new Set(images)).toEqual(new Set(['registry.example.com/mirror/khrun:9.9.9']));
  });
});

describe('the npm package, packed and installed outside the clone', () => {
  let work: string;
  let tarball: string;
  let packed: { files: Array<{ path: string }>; size: number; unpackedSize: number };
  let revision: string | undefined;
  /** npm's environment without what an outer `npm test` sets (npm_config_*), so these installs are plain. */
  const npmEnv = () =>
    Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'khrun-package-'));
    revision = await checkoutRevision(repoRoot);
    // prepack builds dist/khrun.mjs (all bundles) at this checkout's revision.
    const out = await exec('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: repoRoot,
      env: npmEnv(),
      timeoutMs: 600_000,
    });
    expect(out.code, out.stderr).toBe(0);
    const [info] = JSON.parse(out.stdout) as Array<typeof packed & { filename: string }>;
    packed = info!;
    tarball = join(work, info!.filename);
  }, 660_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('holds the launcher, the CLI bundle with its entry, map and code cache, and the docs npm always ships: no TypeScript, no devkit', () => {
    expect(packed.files.map((f) => f.path).sort()).toEqual([
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'dist/khrun.cjs',
      'dist/khrun.cjs.cache',
      'dist/khrun.cjs.map',
      'dist/khrun.mjs',
      'functions/khrun.mjs',
      'package.json',
    ]);
    console.log(
      `[package] ${tarball}: ${(packed.size / 1e6).toFixed(2)} MB packed, ${(packed.unpackedSize / 1e6).toFixed(2)} MB unpacked`,
    );
  });

  it('declares no runtime dependency (the bundle inlines them) and is publishable', async () => {
    const dir = join(work, 'unpacked');
    await mkdir(dir, { recursive: true });
    await run('tar', ['-xzf', tarball, '-C', dir]);
    const manifest = JSON.parse(await readFile(join(dir, 'package/package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest).toMatchObject({
      name: 'khrun',
      version: packageJson.version,
      bin: { khrun: 'functions/khrun.mjs' },
      license: 'Apache-2.0',
    });
    expect(manifest.private).toBeUndefined();
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.optionalDependencies).toBeUndefined();
    expect(manifest.peerDependencies).toBeUndefined();
  });

  describe('installed with npm install -g --prefix', () => {
    let khrun: string;
    let outside: string;
    beforeAll(async () => {
      const prefix = join(work, 'prefix');
      const out = await exec(
        'npm',
        ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball],
        { cwd: work, env: npmEnv(), timeoutMs: 300_000 },
      );
      expect(out.code, out.stderr).toBe(0);
      khrun = join(prefix, 'bin/khrun');
      outside = join(work, 'elsewhere');
      await mkdir(outside);
    }, 360_000);

    const env = (extra: Record<string, string> = {}) => ({
      PATH: process.env.PATH ?? '',
      HOME: work,
      ...extra,
    });

    it('khrun version -o json: the document alone, with the revision it was packed at', async () => {
      const out = await exec(khrun, ['version', '-o', 'json'], { cwd: outside, env: env() });
      expect(out).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(out.stdout)).toEqual({
        version: packageJson.version,
        ...(revision ? { revision } : {}),
        node: process.version,
      });
    });

    it('khrun help lists the commands; a developer command says it needs a checkout (exit 2)', async () => {
      const help = await exec(khrun, ['help'], { cwd: outside, env: env() });
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('usage: khrun <command>');
      for (const command of ['run', 'tick', 'serve', 'takeover', 'version'])
        expect(help.stdout).toContain(`  ${command} `);
      const local = await exec(khrun, ['local', 'up'], { cwd: outside, env: env() });
      expect(local.code).toBe(2);
      expect(local.stderr).toContain('local: is a developer command, not part of this build');
    });

    it('khrun run records a check on the local cluster', async () => {
      const kc = adminKubeConfig();
      const ns = await freshNamespace(kc, 'pkg');
      try {
        await createCheck(kc, ns, 'packaged', {
          containers: [
            nodeContainer("require('kuberhealthy').ReportSuccess().catch(() => process.exit(1));", {
              env: npmClientEnv,
            }),
          ],
        });
        const out = await exec(khrun, ['run', '--check', 'packaged', '-n', ns, '-o', 'json'], {
          cwd: outside,
          env: env({ KUBECONFIG: inject('kubeconfigPath'), KHRUN_REPORT_HOST: inject('hostIp') }),
          timeoutMs: 120_000,
        });
        expect(out.code, out.stderr).toBe(0);
        expect(outcomeOf({ ...out, code: out.code })).toMatchObject({
          result: 'recorded',
          kind: 'Succeeded',
          ok: true,
        });
        expect((await readState(kc, ns, 'packaged'))?.spec.OK).toBe(true);
      } finally {
        await dropNamespace(kc, ns);
      }
    });
  });

  it('npx khrun in an empty project that installed the package', async () => {
    const project = join(work, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), '{"name": "uses-khrun", "private": true}\n');
    const install = await exec('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], {
      cwd: project,
      env: npmEnv(),
      timeoutMs: 300_000,
    });
    expect(install.code, install.stderr).toBe(0);
    const out = await exec('npx', ['--no-install', 'khrun', 'version'], { cwd: project, env: npmEnv() });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`^khrun ${packageJson.version.replace(/\./g, '\\.')} \\(`));
  }, 360_000);
});
