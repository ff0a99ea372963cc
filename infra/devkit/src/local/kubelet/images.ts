import { createHash } from 'node:crypto';

/**
 * Image conventions of the process kubelet. No image is ever pulled or unpacked: a container is its
 * `command` + `args` executed as a local process, or, without `command`, what the image map says its
 * image's ENTRYPOINT/CMD are (image-map.ts; khrun's own image is built in, khrun-image.ts). The image
 * reference decides these outcomes:
 *
 * - An invalid reference (uppercase letters in the repository, spaces, an empty name, a malformed tag
 *   or digest) gives the waiting reason `InvalidImageName`, as the kubelet does; it is never retried.
 * - A repository containing `khrun.invalid/unpullable`, or the tag `unpullable`, cannot be "pulled":
 *   the container waits with `ErrImagePull`, then `ImagePullBackOff`, alternating with a growing
 *   back-off, exactly the sequence a kubelet shows for an image that does not exist.
 * - Every other valid reference is "present". `imageID` is `<repository>@sha256:<hash of the reference>`,
 *   stable per reference but not a real digest.
 *
 * A crash or a hang needs no convention: they are commands (`sh -c 'exit 3'`, `sleep 3600`).
 *
 * A container without `command` whose image is not in the map waits with `CreateContainerError` ("no
 * command specified", what containerd reports for an image without an entrypoint). References are checked the way the kubelet's docker normalisation does: a first path component
 * with a dot, a colon or uppercase letters is a registry host (`UPPER/app` is valid, `Upper` is not).
 */
export type ImageCheck =
  | { kind: 'present'; imageID: string }
  | { kind: 'invalid'; message: string }
  | { kind: 'unpullable'; message: string };

// The grammar of github.com/distribution/reference (the one the kubelet validates against).
const alnum = '[a-z0-9]+';
const separator = '(?:[._]|__|[-]+)';
const pathComponent = `${alnum}(?:${separator}${alnum})*`;
const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const ipv6 = '\\[(?:[a-fA-F0-9:]+)\\]';
const domain = `(?:${domainComponent}(?:\\.${domainComponent})*|${ipv6})(?::[0-9]+)?`;
const tag = '[\\w][\\w.-]{0,127}';
const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}';
const referencePattern = new RegExp(
  `^(?<name>(?:${domain}/)?${pathComponent}(?:/${pathComponent})*)(?::(?<tag>${tag}))?(?:@(?<digest>${digest}))?$`,
);

export interface ParsedImage {
  /** Repository with its domain as written, e.g. `busybox` or `khrun.invalid/unpullable/x`. */
  name: string;
  tag?: string;
  digest?: string;
}

/** Parses an image reference; undefined when it is not a valid reference. */
export function parseImageReference(image: string): ParsedImage | undefined {
  const match = referencePattern.exec(image);
  const name = match?.groups?.name;
  if (!name || name.length > 255) return undefined;
  return { name, tag: match.groups?.tag, digest: match.groups?.digest };
}

/** Decides, without side effects, what "pulling" this image does on the process kubelet. */
export function checkImage(image: string | undefined): ImageCheck {
  const ref = image ?? '';
  const parsed = parseImageReference(ref);
  if (!parsed) {
    return {
      kind: 'invalid',
      message: `Failed to apply default image tag "${ref}": couldn't parse image name "${ref}": invalid reference format`,
    };
  }
  if (parsed.name.includes('khrun.invalid/unpullable') || parsed.tag === 'unpullable') {
    return {
      kind: 'unpullable',
      message:
        `Failed to pull image "${ref}": by the khrun process kubelet's convention, images named ` +
        `khrun.invalid/unpullable/* or tagged :unpullable cannot be pulled`,
    };
  }
  const hash = createHash('sha256').update(ref).digest('hex');
  return { kind: 'present', imageID: `${parsed.name}@sha256:${hash}` };
}

/** The kubelet's message while it backs off pulling. */
export function imagePullBackOffMessage(image: string): string {
  return `Back-off pulling image "${image}"`;
}
