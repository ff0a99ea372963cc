import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// infra/image/Dockerfile's OCI labels say what package.json says (title, description, licence, source,
// version), its version guard refuses a VERSION other than package.json's, and its bundle is built with the
// REVISION the revision label shows. (No Docker daemon here: the build itself runs in the release workflow.)

const root = resolve(import.meta.dirname, '../..');
const dockerfile = readFileSync(resolve(root, 'infra/image/Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  description: string;
  license: string;
  repository: { url: string };
};

/** The instructions, continuation lines joined and comments dropped, with the stage each belongs to. */
function instructions(text: string): Array<{ keyword: string; args: string; stage: number }> {
  const out: Array<{ keyword: string; args: string; stage: number }> = [];
  let stage = -1;
  let pending = '';
  for (const line of text.split('\n')) {
    if (!pending && (/^\s*#/.test(line) || line.trim() === '')) continue;
    pending += pending ? ` ${line.trim()}` : line.trim();
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1).trimEnd();
      continue;
    }
    const [keyword = '', ...rest] = pending.split(/\s+/);
    if (keyword.toUpperCase() === 'FROM') stage += 1;
    out.push({ keyword: keyword.toUpperCase(), args: rest.join(' '), stage });
    pending = '';
  }
  return out;
}

const all = instructions(dockerfile);
/** A build argument's reference as the Dockerfile writes it: ${NAME}. */
const arg = (name: string) => ['$', '{', name, '}'].join('');
const lastStage = Math.max(...all.map((i) => i.stage));

/** The labels of the final stage: key → value as written (quotes removed). */
function labels(): Map<string, string> {
  const found = new Map<string, string>();
  for (const i of all.filter((i) => i.keyword === 'LABEL' && i.stage === lastStage)) {
    for (const m of i.args.matchAll(/([\w.-]+)="([^"]*)"/g)) found.set(m[1]!, m[2]!);
  }
  return found;
}

describe('infra/image/Dockerfile', () => {
  it('declares its build arguments once, before the first FROM, with the defaults of package.json', () => {
    const global = all.filter((i) => i.stage === -1 && i.keyword === 'ARG').map((i) => i.args);
    expect(global).toEqual([
      `VERSION=${pkg.version}`,
      'REVISION=""',
      `SOURCE=${pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '')}`,
    ]);
  });

  it("labels the image with the OCI annotations, from the build arguments and package.json's fields", () => {
    expect(Object.fromEntries(labels())).toEqual({
      'org.opencontainers.image.title': pkg.name,
      'org.opencontainers.image.description': pkg.description,
      'org.opencontainers.image.version': arg('VERSION'),
      'org.opencontainers.image.revision': arg('REVISION'),
      'org.opencontainers.image.source': arg('SOURCE'),
      'org.opencontainers.image.licenses': pkg.license,
    });
    const finalArgs = all.filter((i) => i.stage === lastStage && i.keyword === 'ARG').map((i) => i.args);
    expect(finalArgs).toEqual(['VERSION', 'REVISION', 'SOURCE']);
  });

  it('builds the bundle once, on the build platform, with the revision the label carries', () => {
    const from = all.filter((i) => i.keyword === 'FROM').map((i) => i.args);
    expect(from[0]).toMatch(/^--platform=\$BUILDPLATFORM node:20-alpine AS build$/);
    const buildStage = all.filter((i) => i.stage === 0);
    expect(buildStage.filter((i) => i.keyword === 'ARG').map((i) => i.args)).toEqual(['VERSION', 'REVISION']);
    expect(buildStage.filter((i) => i.keyword === 'RUN').map((i) => i.args)).toContain(
      'node functions/khrun.mjs build --outdir /src/dist --revision "$REVISION"',
    );
  });

  it("refuses a VERSION other than package.json's before anything is installed", async () => {
    const guard = all.find(
      (i) => i.stage === 0 && i.keyword === 'RUN' && i.args.includes('process.env.VERSION'),
    );
    expect(guard).toBeDefined();
    const buildRuns = all.filter((i) => i.stage === 0 && i.keyword === 'RUN');
    expect(buildRuns.indexOf(guard!)).toBe(0);
    const sh = (VERSION: string) =>
      promisify(execFile)('sh', ['-c', guard!.args], { cwd: root, env: { ...process.env, VERSION } }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
    expect(await sh(pkg.version)).toEqual({ code: 0, stderr: '' });
    const wrong = await sh('9.9.9');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(
      `VERSION=9.9.9 is not package.json version ${pkg.version}: pass --build-arg VERSION=${pkg.version}`,
    );
  }, 30_000);
});
