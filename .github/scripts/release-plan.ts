// What a release tag publishes, checked before anything is pushed (.github/workflows/release.yml, job plan):
//
//   npx tsx .github/scripts/release-plan.ts vX.Y.Z NOTES_FILE
//
// The tag must name the version every file of the checkout carries (package.json, the chart's version and
// appVersion, the kustomization's image tag, the Dockerfile's VERSION) and CHANGELOG.md must have its section;
// otherwise it exits 1 listing every mismatch, before an image, chart or package exists. It writes the
// section to NOTES_FILE (the GitHub release's notes) and the plan to $GITHUB_OUTPUT (or stdout): the image
// repository (the chart's image.repository), its tags, where the chart goes, and whether it is a prerelease.
// docs/release.md describes the release.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';

/** A release tag: v, then a semantic version (a prerelease suffix allowed, build metadata not). */
const TAG = /^v((0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?)$/;

/** The files a release reads, relative to the repository root. */
export const RELEASE_FILES = {
  packageJson: 'package.json',
  chartYaml: 'infra/helm/khrun/Chart.yaml',
  valuesYaml: 'infra/helm/khrun/values.yaml',
  kustomization: 'infra/deploy/kustomization.yaml',
  dockerfile: 'infra/image/Dockerfile',
  changelog: 'CHANGELOG.md',
} as const;

/** The texts of RELEASE_FILES. */
export type ReleaseFiles = Record<keyof typeof RELEASE_FILES, string>;

/** What a release publishes. */
export interface ReleasePlan {
  /** The tag without its v: the package, chart and image version. */
  version: string;
  prerelease: boolean;
  /** The image repository (the chart's image.repository), and its registry (the first component). */
  image: string;
  registry: string;
  /** REPOSITORY:X.Y.Z, and REPOSITORY:X.Y unless a prerelease. */
  imageTags: string[];
  /** Where `helm push` puts the chart: oci://REGISTRY/OWNER/charts (the chart is then .../charts/khrun). */
  chartRepository: string;
  /** The CHANGELOG section of the version: the GitHub release's notes. */
  notes: string;
}

/** The version of a release tag, or undefined when the tag is not one (`v1.2.3`, `v1.2.3-rc.1`). */
export function tagVersion(
  tag: string,
): { version: string; major: string; minor: string; prerelease: boolean } | undefined {
  const m = TAG.exec(tag);
  if (!m) return undefined;
  return { version: m[1]!, major: m[2]!, minor: m[3]!, prerelease: m[5] !== undefined };
}

/** Every place whose version differs from `version` (pure): one line each, naming the file and the field. */
export function versionMismatches(files: ReleaseFiles, version: string): string[] {
  const problems: string[] = [];
  const expect = (where: string, actual: unknown, what: string) => {
    if (actual !== version) problems.push(`${where}: ${what} is ${JSON.stringify(actual)}, not ${version}`);
  };
  expect(RELEASE_FILES.packageJson, JSON.parse(files.packageJson).version, 'version');
  const chart = parseYaml(files.chartYaml) as { version?: unknown; appVersion?: unknown } | null;
  expect(RELEASE_FILES.chartYaml, chart?.version, 'version');
  expect(RELEASE_FILES.chartYaml, chart?.appVersion, 'appVersion');
  const kustomization = parseYaml(files.kustomization) as {
    images?: Array<{ name?: string; newTag?: unknown }>;
  } | null;
  const repository = imageRepository(files.valuesYaml);
  const image = kustomization?.images?.find((i) => i?.name === repository);
  expect(RELEASE_FILES.kustomization, image?.newTag, `images[name=${repository}].newTag`);
  const arg = /^ARG VERSION=(\S+)$/m.exec(files.dockerfile)?.[1];
  expect(RELEASE_FILES.dockerfile, arg, 'ARG VERSION');
  return problems;
}

/** The image repository releases push: the chart's default `image.repository` (values.yaml). */
export function imageRepository(valuesYaml: string): string {
  const repository = (parseYaml(valuesYaml) as { image?: { repository?: unknown } } | null)?.image
    ?.repository;
  if (typeof repository !== 'string' || !/^[a-z0-9.-]+(:\d+)?(\/[a-z0-9._-]+)+$/.test(repository))
    throw new Error(
      `${RELEASE_FILES.valuesYaml}: image.repository ${JSON.stringify(repository)} is not REGISTRY/PATH`,
    );
  return repository;
}

/**
 * The section of a Keep a Changelog file for `version` (`## [1.2.3] - 2027-01-31`), without its heading and
 * trimmed; undefined when there is none or it is empty.
 */
export function changelogSection(changelog: string, version: string): string | undefined {
  const lines = changelog.split('\n');
  const escaped = version.replace(/[.+-]/g, '\\$&');
  const start = lines.findIndex((line) => new RegExp(`^## \\[${escaped}\\]( |$)`).test(line));
  if (start < 0) return undefined;
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => /^## /.test(line) || /^\[[^\]]+\]: /.test(line));
  const body = (end < 0 ? rest : rest.slice(0, end)).join('\n').trim();
  return body === '' ? undefined : body;
}

/** The plan of a release (pure): what is pushed where, and the notes; throws with every problem found. */
export function releasePlan(tag: string, files: ReleaseFiles): ReleasePlan {
  const parsed = tagVersion(tag);
  if (!parsed)
    throw new Error(
      `tag ${JSON.stringify(tag)} is not a release tag: v, then a version such as v1.2.3 or v1.2.3-rc.1`,
    );
  const { version, major, minor, prerelease } = parsed;
  const problems = versionMismatches(files, version);
  const notes = changelogSection(files.changelog, version);
  if (!notes)
    problems.push(
      `${RELEASE_FILES.changelog}: no section "## [${version}] - YYYY-MM-DD" with the release's changes`,
    );
  if (problems.length || !notes) {
    throw new Error(
      `release ${tag} does not match the checkout (fix these, then tag again):\n` +
        problems.map((p) => `  - ${p}`).join('\n'),
    );
  }
  const image = imageRepository(files.valuesYaml);
  const registry = image.split('/')[0]!;
  const imageTags = [`${image}:${version}`, ...(prerelease ? [] : [`${image}:${major}.${minor}`])];
  const chartRepository = `oci://${image.slice(0, image.lastIndexOf('/'))}/charts`;
  return { version, prerelease, image, registry, imageTags, chartRepository, notes };
}

/** Reads RELEASE_FILES under root. */
export function readReleaseFiles(root: string): ReleaseFiles {
  return Object.fromEntries(
    Object.entries(RELEASE_FILES).map(([key, path]) => [key, readFileSync(join(root, path), 'utf8')]),
  ) as ReleaseFiles;
}

function main(): number {
  const [tag, notesFile] = process.argv.slice(2);
  if (!tag || !notesFile) {
    process.stderr.write('usage: npx tsx .github/scripts/release-plan.ts vX.Y.Z NOTES_FILE\n');
    return 2;
  }
  let plan: ReleasePlan;
  try {
    plan = releasePlan(tag, readReleaseFiles(resolve(import.meta.dirname, '../..')));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  writeFileSync(notesFile, `${plan.notes}\n`);
  const outputs = [
    `version=${plan.version}`,
    `prerelease=${plan.prerelease}`,
    `image=${plan.image}`,
    `registry=${plan.registry}`,
    `image_tags=${plan.imageTags.join(',')}`,
    `chart_repository=${plan.chartRepository}`,
  ].join('\n');
  if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, `${outputs}\n`);
  process.stdout.write(`${outputs}\n`);
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = main();
