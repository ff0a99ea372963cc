import { chmod, mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import type { V1DownwardAPIVolumeFile, V1KeyToPath, V1Pod, V1Volume } from '@kubernetes/client-node';
import type { KubeletApi } from './api.ts';
import { fieldRefValue } from './env.ts';

/** A volume ready to be bind-mounted: its content lives at hostPath. */
export interface PreparedVolume {
  name: string;
  hostPath: string;
  /** configMap, secret, downwardAPI and projected volumes are always mounted read-only, as the kubelet does. */
  readOnly: boolean;
}

/** A volume that cannot be set up (yet): the message is the kubelet's FailedMount text. */
export class VolumeSetupError extends Error {
  override readonly name = 'VolumeSetupError';
}

export interface VolumeContext {
  pod: V1Pod;
  api: KubeletApi;
  /** The pod's own directory; volume contents go to <podDir>/volumes/<name>. */
  podDir: string;
  podIp: string;
  hostIp: string;
}

/** One file of a projected, configMap, secret or downwardAPI volume. */
export interface ProjectedFile {
  path: string;
  data: Buffer;
  mode: number;
}

const DEFAULT_MODE = 0o644;
/** Used when a token source gives no expirationSeconds. Tokens are written once and not refreshed. */
const DEFAULT_TOKEN_SECONDS = 3600;

/**
 * The files a configMap or secret source projects: every key, or only `items` (a listed key that is
 * missing is an error unless the source is optional). Pure.
 */
export function projectKeys(
  source: { kind: 'configmap' | 'secret'; name: string; optional?: boolean },
  data: Readonly<Record<string, Buffer>> | undefined,
  items: V1KeyToPath[] | undefined,
  defaultMode: number | undefined,
): ProjectedFile[] {
  const mode = defaultMode ?? DEFAULT_MODE;
  if (data === undefined) {
    if (source.optional) return [];
    throw new VolumeSetupError(`${source.kind} "${source.name}" not found`);
  }
  if (!items || items.length === 0) {
    return Object.keys(data)
      .sort()
      .map((key) => ({ path: key, data: data[key]!, mode }));
  }
  const files: ProjectedFile[] = [];
  for (const item of items) {
    const value = data[item.key];
    if (value === undefined) {
      if (source.optional) continue;
      throw new VolumeSetupError(`${source.kind} references non-existent config key: ${item.key}`);
    }
    files.push({ path: item.path, data: value, mode: item.mode ?? mode });
  }
  return files;
}

/** Files of a downwardAPI source; only fieldRef items (resourceFieldRef is not supported). Pure. */
export function downwardFiles(
  items: V1DownwardAPIVolumeFile[] | undefined,
  ctx: { pod: V1Pod; podIp: string; hostIp: string },
  defaultMode: number | undefined,
): ProjectedFile[] {
  return (items ?? []).map((item) => {
    if (!item.fieldRef)
      throw new VolumeSetupError(`downwardAPI item ${item.path}: only fieldRef is supported`);
    const value = fieldRefValue(item.fieldRef, ctx);
    if (!value.ok) throw new VolumeSetupError(value.message);
    return {
      path: item.path,
      data: Buffer.from(value.value),
      mode: item.mode ?? defaultMode ?? DEFAULT_MODE,
    };
  });
}

/** Sets up every volume of the pod under podDir; throws VolumeSetupError with the kubelet's message. */
export async function prepareVolumes(ctx: VolumeContext): Promise<Map<string, PreparedVolume>> {
  const out = new Map<string, PreparedVolume>();
  for (const volume of ctx.pod.spec?.volumes ?? []) {
    try {
      out.set(volume.name, await prepareVolume(volume, ctx));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new VolumeSetupError(`MountVolume.SetUp failed for volume "${volume.name}" : ${message}`, {
        cause: error,
      });
    }
  }
  return out;
}

async function prepareVolume(volume: V1Volume, ctx: VolumeContext): Promise<PreparedVolume> {
  const dir = join(ctx.podDir, 'volumes', safeName(volume.name));
  const namespace = ctx.pod.metadata?.namespace ?? '';
  const projected = async (files: ProjectedFile[]) => {
    await writeFiles(dir, files);
    return { name: volume.name, hostPath: dir, readOnly: true };
  };
  if (volume.emptyDir) {
    await mkdir(dir, { recursive: true });
    return { name: volume.name, hostPath: dir, readOnly: false };
  }
  if (volume.hostPath)
    return { name: volume.name, hostPath: await hostPath(volume.hostPath), readOnly: false };
  if (volume.configMap) {
    const src = volume.configMap;
    const data = await ctx.api.readConfigMap(namespace, src.name!);
    return projected(
      projectKeys(
        { kind: 'configmap', name: src.name!, optional: src.optional },
        data,
        src.items,
        src.defaultMode,
      ),
    );
  }
  if (volume.secret) {
    const src = volume.secret;
    const data = await ctx.api.readSecret(namespace, src.secretName!);
    return projected(
      projectKeys(
        { kind: 'secret', name: src.secretName!, optional: src.optional },
        data,
        src.items,
        src.defaultMode,
      ),
    );
  }
  if (volume.downwardAPI) {
    return projected(downwardFiles(volume.downwardAPI.items, ctx, volume.downwardAPI.defaultMode));
  }
  if (volume.projected) {
    const files: ProjectedFile[] = [];
    const mode = volume.projected.defaultMode;
    for (const source of volume.projected.sources ?? []) {
      if (source.serviceAccountToken) {
        const token = await ctx.api.requestToken({
          namespace,
          serviceAccount: ctx.pod.spec?.serviceAccountName || 'default',
          audience: source.serviceAccountToken.audience,
          expirationSeconds: source.serviceAccountToken.expirationSeconds ?? DEFAULT_TOKEN_SECONDS,
          pod: { name: ctx.pod.metadata?.name ?? '', uid: ctx.pod.metadata?.uid ?? '' },
        });
        // No trailing newline: clients put the file's content verbatim into the Authorization header.
        files.push({
          path: source.serviceAccountToken.path,
          data: Buffer.from(token),
          mode: mode ?? DEFAULT_MODE,
        });
      } else if (source.configMap) {
        const src = source.configMap;
        const data = await ctx.api.readConfigMap(namespace, src.name!);
        files.push(
          ...projectKeys(
            { kind: 'configmap', name: src.name!, optional: src.optional },
            data,
            src.items,
            mode,
          ),
        );
      } else if (source.secret) {
        const src = source.secret;
        const data = await ctx.api.readSecret(namespace, src.name!);
        files.push(
          ...projectKeys({ kind: 'secret', name: src.name!, optional: src.optional }, data, src.items, mode),
        );
      } else if (source.downwardAPI) {
        files.push(...downwardFiles(source.downwardAPI.items, ctx, mode));
      } else {
        throw new VolumeSetupError(`projected source ${Object.keys(source).join(',')} is not supported`);
      }
    }
    return projected(files);
  }
  const kind = Object.keys(volume).find((k) => k !== 'name') ?? 'unknown';
  throw new VolumeSetupError(`volume type ${kind} is not supported by the khrun process kubelet`);
}

async function hostPath(src: { path: string; type?: string }): Promise<string> {
  const type = src.type ?? '';
  const info = await stat(src.path).catch(() => undefined);
  if (type === 'DirectoryOrCreate' && !info) await mkdir(src.path, { recursive: true, mode: 0o755 });
  else if (type === 'FileOrCreate' && !info) {
    await mkdir(dirname(src.path), { recursive: true });
    await writeFile(src.path, '', { flag: 'a' });
  } else if (type === 'Directory' && !info?.isDirectory())
    throw new VolumeSetupError(`hostPath type check failed: ${src.path} is not a directory`);
  else if (type === 'File' && !info?.isFile())
    throw new VolumeSetupError(`hostPath type check failed: ${src.path} is not a file`);
  else if (type === 'Socket' && !info?.isSocket())
    throw new VolumeSetupError(`hostPath type check failed: ${src.path} is not a socket`);
  return src.path;
}

async function writeFiles(dir: string, files: ProjectedFile[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const file of files) {
    const rel = normalize(file.path);
    if (rel.startsWith('..') || rel.startsWith('/')) throw new VolumeSetupError(`invalid path ${file.path}`);
    const target = join(dir, rel);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, file.data);
    await chmod(target, file.mode);
  }
}

function safeName(name: string): string {
  return name.replace(/[^a-zA-Z0-9._-]/g, '_');
}
