import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { loadYaml, type V1Container } from '@kubernetes/client-node';
import { parseImageReference } from './images.ts';

/**
 * The image map of the process kubelet: what a container runs when it has no `command`, standing in for
 * the ENTRYPOINT and CMD of an image that is never unpacked here.
 *
 * File format (YAML or JSON; `khrun local up --image-map FILE`):
 *
 * ```yaml
 * images:
 *   # A repository without tag or digest matches every tag and digest of it.
 *   registry.example.com/net-check: [/usr/local/bin/net-check]       # shorthand: the entrypoint
 *   # A reference with a tag (or digest) matches only that one; it wins over its bare repository.
 *   "ghcr.io/acme/disk-check:1.4":
 *     entrypoint: [node, ./disk-check/index.mjs]                       # ./ and ../ from this file's directory
 *     cmd: [--once]                                                     # replaced by the container's args
 * ```
 *
 * Names are compared as the kubelet's docker normalisation does (`busybox`, `library/busybox` and
 * `docker.io/library/busybox` are one repository; no tag means `latest`). An entry of the map given to
 * the kubelet replaces a built-in one of the same key (khrun's own image, khrun-image.ts).
 */
export interface ImageCommand {
  /** The image's ENTRYPOINT as a local argv (may be empty when cmd is not). */
  entrypoint: string[];
  /** The image's CMD: what runs after the entrypoint when the container has neither command nor args. */
  cmd: string[];
  /**
   * Files the command needs that a build produces (khrun's bundle): a missing one fails the start with a
   * StartError carrying this message instead of a confusing "not found" from the command itself.
   */
  requires?: Array<{ path: string; message: string }>;
  /**
   * Programs inside the image and their local builds: a container whose `command` names one (as
   * Kuberhealthy's deploy/kuberhealthy.yaml does with `command: [/app/kuberhealthy]`) runs the local build,
   * so a manifest that names the image's own path runs unedited. Set in code only (not in map files).
   */
  programs?: Readonly<Record<string, string>>;
}

export interface ImageMapEntry extends ImageCommand {
  /** As written: a repository (any tag or digest) or a full reference. */
  image: string;
}

/** The entries in precedence order (earlier wins among matches of the same kind; see lookupImage). */
export type ImageMap = ReadonlyArray<ImageMapEntry>;

/** A problem with an image-map file or entry, naming where it is. */
export class ImageMapError extends Error {
  override readonly name = 'ImageMapError';
}

interface Normalised {
  repository: string;
  tag?: string;
  digest?: string;
}

/** The docker normalisation: `busybox` → `docker.io/library/busybox`, `index.docker.io` → `docker.io`. */
function normalise(image: string): Normalised | undefined {
  const parsed = parseImageReference(image);
  if (!parsed) return undefined;
  const parts = parsed.name.split('/');
  const first = parts[0] ?? '';
  const hasDomain =
    parts.length > 1 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase());
  let domain = hasDomain ? first : 'docker.io';
  const path = hasDomain ? parts.slice(1) : parts;
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && path.length === 1) path.unshift('library');
  return { repository: `${domain}/${path.join('/')}`, tag: parsed.tag, digest: parsed.digest };
}

/**
 * The entry for an image reference, or undefined. An entry with a tag matches that tag (`busybox` without
 * one is `busybox:latest`), one with a digest that digest, one with neither every reference of the
 * repository; exact entries win over bare repositories, and among equals the first in the map.
 */
export function lookupImage(map: ImageMap, image: string): ImageMapEntry | undefined {
  const ref = normalise(image);
  if (!ref) return undefined;
  const tag = ref.tag ?? (ref.digest ? undefined : 'latest');
  let repositoryMatch: ImageMapEntry | undefined;
  for (const entry of map) {
    const key = normalise(entry.image);
    if (!key || key.repository !== ref.repository) continue;
    if (key.digest) {
      if (key.digest === ref.digest) return entry;
    } else if (key.tag) {
      if (key.tag === tag) return entry;
    } else {
      repositoryMatch ??= entry;
    }
  }
  return repositoryMatch;
}

export type ContainerArgv =
  | { ok: true; argv: string[]; requires: NonNullable<ImageCommand['requires']> }
  | { ok: false; message: string };

/**
 * The argv a container runs, with Kubernetes' rules for command/args over ENTRYPOINT/CMD: `command`
 * replaces the entrypoint and drops CMD (a program it names inside the image runs its local build);
 * `args` replace CMD; with neither, ENTRYPOINT + CMD. Pure.
 */
export function containerArgv(
  spec: Pick<V1Container, 'command' | 'args' | 'image'>,
  map: ImageMap,
): ContainerArgv {
  if (spec.command?.length) {
    const [program = '', ...rest] = spec.command;
    const local = lookupImage(map, spec.image ?? '')?.programs?.[program] ?? program;
    return { ok: true, argv: [local, ...rest, ...(spec.args ?? [])], requires: [] };
  }
  const entry = lookupImage(map, spec.image ?? '');
  if (!entry) {
    return {
      ok: false,
      message:
        `no command specified: image "${spec.image}" is not in the khrun process kubelet's image map, which ` +
        "stands in for an image's ENTRYPOINT and CMD; set command, or map the image " +
        '(khrun local up --image-map FILE; see infra/devkit/src/local/kubelet/image-map.ts)',
    };
  }
  const argv = [...entry.entrypoint, ...(spec.args ?? entry.cmd)];
  if (argv.length === 0)
    return { ok: false, message: `no command specified: image "${spec.image}" maps to an empty command` };
  return { ok: true, argv, requires: entry.requires ?? [] };
}

const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string');

/**
 * Validates the parsed document of an image-map file (`{images: {REF: argv | {entrypoint, cmd}}}`);
 * arguments starting with `./` or `../` are resolved against baseDir (the file's directory).
 */
export function parseImageMap(doc: unknown, source: string, baseDir: string): ImageMapEntry[] {
  const fail = (problem: string): never => {
    throw new ImageMapError(`image map ${source}: ${problem}`);
  };
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    fail('expected a mapping with the key "images"');
  const { images, ...rest } = doc as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length) fail(`unknown key ${JSON.stringify(unknown[0])} (the only key is "images")`);
  if (typeof images !== 'object' || images === null || Array.isArray(images))
    fail('"images" must map image references to commands');
  const local = (args: string[]) => args.map((a) => (/^\.\.?\//.test(a) ? resolve(baseDir, a) : a));
  return Object.entries(images as Record<string, unknown>).map(([image, value]) => {
    if (!parseImageReference(image)) fail(`"${image}" is not a valid image reference`);
    if (isStringArray(value)) {
      if (value.length === 0) fail(`"${image}": the command is empty`);
      return { image, entrypoint: local(value), cmd: [] };
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      fail(`"${image}": expected a list of strings (the entrypoint) or {entrypoint, cmd}`);
    const { entrypoint = [], cmd = [], ...other } = value as Record<string, unknown>;
    const extra = Object.keys(other);
    if (extra.length) fail(`"${image}": unknown key ${JSON.stringify(extra[0])} (use entrypoint and cmd)`);
    if (!isStringArray(entrypoint) || !isStringArray(cmd))
      fail(`"${image}": entrypoint and cmd must be lists of strings`);
    if ((entrypoint as string[]).length + (cmd as string[]).length === 0)
      fail(`"${image}": entrypoint and cmd are both empty`);
    return { image, entrypoint: local(entrypoint as string[]), cmd: local(cmd as string[]) };
  });
}

/** Reads and validates an image-map file (YAML, which includes JSON). */
export async function loadImageMapFile(path: string): Promise<ImageMapEntry[]> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    throw new ImageMapError(`image map ${absolute}: cannot read it (${(error as Error).message})`, {
      cause: error,
    });
  }
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (error) {
    throw new ImageMapError(`image map ${absolute}: not valid YAML or JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
  return parseImageMap(doc, absolute, dirname(absolute));
}
