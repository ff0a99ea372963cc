import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { ImageMapEntry } from './image-map.ts';

/**
 * The repository releases push (docs/release.md) and the chart (values.yaml `image.repository`) and the
 * kustomization (infra/deploy) run by default: any tag or digest of it runs the local build.
 */
export const KHRUN_IMAGE = 'ghcr.io/khrun/khrun';

/** The short name manifests written for the local cluster use (`image: khrun`): the local build as well. */
export const KHRUN_LOCAL_IMAGE = 'khrun';

/** Where the image keeps the bundle (infra/image/Dockerfile: COPY ... /app/dist/). */
const IMAGE_DIST = '/app/dist/';

/**
 * Parses a Dockerfile's exec-form ENTRYPOINT and CMD (the last of each, as docker does); the shell form
 * is not supported (the image does not use it). Pure.
 */
export function dockerfileCommand(dockerfile: string): { entrypoint: string[]; cmd: string[] } {
  const last = (instruction: string) => {
    const lines = [...dockerfile.matchAll(new RegExp(`^${instruction}\\s+(.*?)\\s*$`, 'gm'))];
    const text = lines.at(-1)?.[1];
    if (text === undefined) return undefined;
    let argv: unknown;
    try {
      argv = JSON.parse(text);
    } catch {
      argv = undefined;
    }
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string'))
      throw new Error(`${instruction} ${text} is not in exec form (a JSON list of strings)`);
    return argv as string[];
  };
  const entrypoint = last('ENTRYPOINT');
  if (!entrypoint) throw new Error('the Dockerfile has no ENTRYPOINT');
  return { entrypoint, cmd: last('CMD') ?? [] };
}

/**
 * khrun's own image as the process kubelet runs it, one entry for each of its names (KHRUN_IMAGE,
 * KHRUN_LOCAL_IMAGE): the local build of the image's ENTRYPOINT and CMD (read from
 * infra/image/Dockerfile), minus tini (the kubelet signals and reaps the process itself), with
 * `node` as this Node and /app/dist/ as distDir (default <root>/dist, what `npm run build` writes). A
 * missing bundle fails the container's start with a message that says to build it.
 */
export async function khrunImageEntries(opts: { root: string; distDir?: string }): Promise<ImageMapEntry[]> {
  const dockerfilePath = join(opts.root, 'infra/image/Dockerfile');
  const distDir = opts.distDir ?? join(opts.root, 'dist');
  const { entrypoint, cmd } = dockerfileCommand(await readFile(dockerfilePath, 'utf8'));
  let argv = entrypoint;
  if (argv[0]?.endsWith('/tini')) argv = argv.slice(argv[1] === '--' ? 2 : 1);
  const requires: NonNullable<ImageMapEntry['requires']> = [];
  const local = (arg: string) => {
    if (arg === 'node') return process.execPath;
    if (!arg.startsWith(IMAGE_DIST)) return arg;
    const path = join(distDir, arg.slice(IMAGE_DIST.length));
    const shown = relative(opts.root, path).startsWith('..') ? path : relative(opts.root, path);
    requires.push({
      path,
      message:
        `${shown} does not exist: the process kubelet runs image ${KHRUN_IMAGE} as the local build of its ` +
        `ENTRYPOINT; run npm run build (in ${opts.root})`,
    });
    return path;
  };
  const command = { entrypoint: argv.map(local), cmd: cmd.map(local), requires };
  return [KHRUN_IMAGE, KHRUN_LOCAL_IMAGE].map((image) => ({ image, ...command }));
}
