import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { pinnedHelmVersion } from '@khrun/devkit/local/binaries.ts';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  changelogSection,
  imageRepository,
  readReleaseFiles,
  releasePlan,
  tagVersion,
  versionMismatches,
} from '../../.github/scripts/release-plan.ts';

// The release's plan (.github/scripts/release-plan.ts): a tag is checked against every file that carries
// the version before anything is published, and the workflows do what docs/release.md says they do.

const root = resolve(import.meta.dirname, '../..');
const files = readReleaseFiles(root);
const version = (JSON.parse(files.packageJson) as { version: string }).version;
const withSection = (v: string) => ({
  ...files,
  changelog: `# Changelog\n\n## [Unreleased]\n\n## [${v}] - 2027-01-31\n\n### Added\n\n- Everything.\n\n[${v}]: https://example.com\n`,
});

describe('tagVersion', () => {
  it.each([
    ['v1.2.3', { version: '1.2.3', major: '1', minor: '2', prerelease: false }],
    ['v0.1.0', { version: '0.1.0', major: '0', minor: '1', prerelease: false }],
    ['v1.2.3-rc.1', { version: '1.2.3-rc.1', major: '1', minor: '2', prerelease: true }],
  ])('%s is a release', (tag, expected) => {
    expect(tagVersion(tag)).toEqual(expected);
  });

  it.each([['1.2.3'], ['v1.2'], ['v01.2.3'], ['v1.2.3+build'], ['v1.2.3-'], ['release-1']])(
    '%s is not',
    (tag) => {
      expect(tagVersion(tag)).toBeUndefined();
    },
  );
});

describe('the checkout', () => {
  it('carries one version everywhere a release reads it (package.json, chart, kustomization, Dockerfile)', () => {
    expect(versionMismatches(files, version)).toEqual([]);
  });

  it("pushes the image the chart runs by default (values.yaml's image.repository)", () => {
    expect(imageRepository(files.valuesYaml)).toBe('ghcr.io/khrun/khrun');
  });

  it('keeps a changelog in Keep a Changelog form, with an Unreleased section', () => {
    expect(files.changelog).toMatch(/^# Changelog\n/);
    expect(files.changelog).toContain('https://keepachangelog.com/en/1.1.0/');
    expect(changelogSection(files.changelog, 'Unreleased')).toBeDefined();
  });
});

describe('releasePlan', () => {
  it('a release: the image at X.Y.Z and X.Y, the chart beside it, the CHANGELOG section as notes', () => {
    expect(releasePlan(`v${version}`, withSection(version))).toEqual({
      version,
      prerelease: false,
      image: 'ghcr.io/khrun/khrun',
      registry: 'ghcr.io',
      imageTags: [
        `ghcr.io/khrun/khrun:${version}`,
        `ghcr.io/khrun/khrun:${version.split('.').slice(0, 2).join('.')}`,
      ],
      chartRepository: 'oci://ghcr.io/khrun/charts',
      notes: '### Added\n\n- Everything.',
    });
  });

  it('a prerelease: only its own tag', () => {
    const v = `${version}-rc.1`;
    const bumped = {
      ...withSection(v),
      packageJson: files.packageJson.replace(`"version": "${version}"`, `"version": "${v}"`),
      chartYaml: files.chartYaml
        .replace(`version: ${version}`, `version: ${v}`)
        .replace(`appVersion: "${version}"`, `appVersion: "${v}"`),
      kustomization: files.kustomization.replace(`newTag: ${version}`, `newTag: ${v}`),
      dockerfile: files.dockerfile.replace(`ARG VERSION=${version}`, `ARG VERSION=${v}`),
    };
    expect(releasePlan(`v${v}`, bumped)).toMatchObject({
      version: v,
      prerelease: true,
      imageTags: [`ghcr.io/khrun/khrun:${v}`],
    });
  });

  it('refuses a tag the files do not carry, naming every place and the CHANGELOG section', () => {
    const message = (() => {
      try {
        releasePlan('v9.9.9', files);
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(message).toBe(
      [
        'release v9.9.9 does not match the checkout (fix these, then tag again):',
        `  - package.json: version is "${version}", not 9.9.9`,
        `  - infra/helm/khrun/Chart.yaml: version is "${version}", not 9.9.9`,
        `  - infra/helm/khrun/Chart.yaml: appVersion is "${version}", not 9.9.9`,
        `  - infra/deploy/kustomization.yaml: images[name=ghcr.io/khrun/khrun].newTag is "${version}", not 9.9.9`,
        `  - infra/image/Dockerfile: ARG VERSION is "${version}", not 9.9.9`,
        '  - CHANGELOG.md: no section "## [9.9.9] - YYYY-MM-DD" with the release\'s changes',
      ].join('\n'),
    );
    expect(() => releasePlan('1.2.3', files)).toThrow(/tag "1.2.3" is not a release tag/);
  });

  it('refuses a release whose CHANGELOG section is missing or empty', () => {
    const empty = {
      ...files,
      changelog: `# Changelog\n\n## [${version}] - 2027-01-31\n\n## [0.0.1]\n\n- x\n`,
    };
    expect(() => releasePlan(`v${version}`, empty)).toThrow(/CHANGELOG\.md: no section/);
  });
});

describe('changelogSection', () => {
  const log =
    '# Changelog\n\n## [Unreleased]\n\n- next\n\n## [1.2.3] - 2027-01-31\n\n- one\n- two\n\n## [1.2.2] - 2027-01-01\n\n- old\n\n[1.2.3]: https://x\n';
  it('is the text under the version heading, up to the next heading or the link references', () => {
    expect(changelogSection(log, '1.2.3')).toBe('- one\n- two');
    expect(changelogSection(log, '1.2.2')).toBe('- old');
    expect(changelogSection(log, 'Unreleased')).toBe('- next');
    expect(changelogSection(log, '1.2')).toBeUndefined();
  });
});

describe('the script, as the workflow runs it', () => {
  it('exits 1 with the mismatches, writing no notes; 2 without its arguments', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'khrun-plan-'));
    try {
      const script = join(root, '.github/scripts/release-plan.ts');
      const tsx = join(root, 'node_modules/.bin/tsx');
      const failed = await promisify(execFile)(tsx, [script, 'v9.9.9', join(dir, 'notes.md')], {
        env: { ...process.env, GITHUB_OUTPUT: join(dir, 'out') },
      }).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toContain('release v9.9.9 does not match the checkout');
      await expect(readFile(join(dir, 'notes.md'))).rejects.toThrow(/ENOENT/);
      await expect(readFile(join(dir, 'out'))).rejects.toThrow(/ENOENT/);
      const usage = await promisify(execFile)(tsx, [script]).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(usage?.code).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Job {
  uses?: string;
  needs?: string | string[];
  permissions?: Record<string, string>;
  steps?: Step[];
}
const workflow = async (name: string) =>
  parseYaml(await readFile(join(root, '.github/workflows', name), 'utf8')) as {
    on: Record<string, unknown>;
    permissions?: Record<string, string>;
    jobs: Record<string, Job>;
  };
/** A GitHub Actions expression as a workflow writes it: `${{ EXPR }}`. */
const expr = (e: string) => `$${'{{'} ${e} }}`;
const stepUsing = (job: Job | undefined, action: string) =>
  job?.steps?.find((s) => s.uses?.startsWith(`${action}@`));

describe('the workflows', () => {
  it('ci.yml runs .ci/run on pushes to branches and pull requests, and when release.yml calls it', async () => {
    const ci = await workflow('ci.yml');
    expect(Object.keys(ci.on).sort()).toEqual(['pull_request', 'push', 'workflow_call']);
    expect(ci.on.push).toEqual({ branches: ['**'] });
    expect(ci.permissions).toEqual({ contents: 'read' });
    expect(ci.jobs.test?.steps?.at(-1)?.run).toBe('.ci/run');
  });

  it('release.yml: on v* tags; plan first, the tests, then image, chart and npm, the release last', async () => {
    const release = await workflow('release.yml');
    expect(release.on).toEqual({ push: { tags: ['v*'] } });
    expect(release.permissions).toEqual({});
    const { plan, test, image, chart, npm, release: gh } = release.jobs;
    expect(
      plan?.steps?.some((s) => s.run?.includes('.github/scripts/release-plan.ts "$GITHUB_REF_NAME"')),
    ).toBe(true);
    expect(test).toMatchObject({ uses: './.github/workflows/ci.yml', needs: 'plan' });
    expect(image?.needs).toEqual(['plan', 'test']);
    expect(chart?.needs).toEqual(['plan', 'image']);
    expect(npm?.needs).toEqual(['plan', 'image']);
    expect(gh?.needs).toEqual(['plan', 'chart', 'npm']);
    expect(gh?.permissions).toEqual({ contents: 'write' });
  });

  it('the image: both platforms, the Dockerfile, the version and revision as build arguments', async () => {
    const image = (await workflow('release.yml')).jobs.image;
    expect(image?.permissions).toEqual({ contents: 'read', packages: 'write' });
    const build = stepUsing(image, 'docker/build-push-action')?.with;
    expect(build).toMatchObject({
      file: 'infra/image/Dockerfile',
      platforms: 'linux/amd64,linux/arm64',
      push: true,
    });
    expect(String(build?.['build-args']).split('\n').filter(Boolean)).toEqual([
      `VERSION=${expr('needs.plan.outputs.version')}`,
      `REVISION=${expr('github.sha')}`,
      `SOURCE=${expr('github.server_url')}/${expr('github.repository')}`,
    ]);
  });

  it('the chart: packaged with the helm the tests build, version and appVersion from the tag', async () => {
    const chart = (await workflow('release.yml')).jobs.chart;
    const { helm } = await pinnedHelmVersion(join(root, 'infra/build'));
    expect(stepUsing(chart, 'azure/setup-helm')?.with).toEqual({ version: helm });
    const runs = chart?.steps?.map((s) => s.run ?? '').join('\n');
    expect(runs).toContain('helm package infra/helm/khrun --version "$VERSION" --app-version "$VERSION"');
    expect(runs).toContain('helm push "chart/khrun-$VERSION.tgz" "$CHART_REPOSITORY"');
  });

  it('npm: published with provenance (an OIDC token) after npm ci, whose prepack builds the bundle', async () => {
    const npm = (await workflow('release.yml')).jobs.npm;
    expect(npm?.permissions).toEqual({ contents: 'read', 'id-token': 'write' });
    const runs = npm?.steps?.map((s) => s.run ?? '').filter(Boolean);
    expect(runs).toEqual([
      'npm ci --no-audit --no-fund',
      'npm publish --provenance --access public --tag "$DIST_TAG"',
    ]);
  });
});
