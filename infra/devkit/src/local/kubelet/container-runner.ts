import { access, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { apiErrorMessage } from '../../../../../lib/kube/errors.ts';
import type { Spawner } from '../spawner.ts';
import type { KubeletApi } from './api.ts';
import {
  type ContainerProcess,
  PRELUDE_FAILED,
  PRELUDE_MARKER,
  planMounts,
  spawnContainer,
  type Tools,
} from './container-process.ts';
import { type EnvObjects, podHostname, referencedEnvObjects, resolveContainerEnv } from './env.ts';
import type { HostMountPoints } from './host-paths.ts';
import { containerArgv, type ImageMap } from './image-map.ts';
import { checkImage, imagePullBackOffMessage } from './images.ts';
import { readTail, terminationMessage } from './logs.ts';
import type { RestartBackoff } from './restart.ts';
import type { Sandbox } from './sandbox.ts';
import { apiTime, type ContainerRecord, type Terminated } from './status.ts';
import type { PreparedVolume } from './volumes.ts';

/** What running one container needs from its pod worker. */
export interface RunnerContext {
  pod(): V1Pod;
  sandbox: Sandbox;
  volumes: ReadonlyMap<string, PreparedVolume>;
  hostIp: string;
  apiServer: { host: string; port: number };
  imageNodePath?: string;
  /** What a container without `command` runs (its image's ENTRYPOINT/CMD); see image-map.ts. */
  imageMap: ImageMap;
  api: KubeletApi;
  tools: Tools;
  /** Forks the containers' processes (see spawner.ts). */
  spawner: Spawner;
  hostPaths: HostMountPoints;
  podDir: string;
  /** Aborts when the pod stops: waits end, nothing new starts. */
  signal: AbortSignal;
  /** The record changed: write the status. */
  changed(): void;
  /** Resolves once the status as it is now has been written. */
  flush(): Promise<void>;
  /** Registers a live process with the worker (which signals it on termination); returns the unregister. */
  track(container: string, proc: ContainerProcess): () => void;
  backoff: RestartBackoff;
}

/** Where a container's output goes, per run, as the kubelet's /var/log/pods/<pod>/<container>/<n>.log. */
export function containerLogPath(podDir: string, container: string, restartCount: number): string {
  return join(podDir, 'logs', container, `${restartCount}.log`);
}

export function terminationMessagePath(podDir: string, container: string): string {
  return join(podDir, 'containers', container, 'termination-log');
}

const untilAborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

const waitOrStop = (ms: number, signal: AbortSignal) => abortableDelay(ms, signal).catch(() => undefined);

/**
 * Runs a container once: "pulls" its image (images.ts conventions), resolves its command (its own, else
 * its image's from the image map) and env, starts it as a process and waits for it to exit. Problems before the start keep the record waiting
 * with the kubelet's reason (ErrImagePull/ImagePullBackOff, InvalidImageName, CreateContainerError,
 * CreateContainerConfigError) and are retried with back-off when they can change. Resolves with the
 * terminated state, or undefined when the pod stopped before the container ran.
 */
export async function runContainerOnce(
  ctx: RunnerContext,
  spec: V1Container,
  record: ContainerRecord,
): Promise<Terminated | undefined> {
  let pullDelayMs = ctx.backoff.initialMs * 2;
  let configDelayMs = ctx.backoff.initialMs;
  const setWaiting = (reason: string, message?: string) => {
    record.state = { kind: 'waiting', reason, ...(message ? { message } : {}) };
    ctx.changed();
  };
  while (!ctx.signal.aborted) {
    const image = checkImage(spec.image);
    if (image.kind === 'invalid') {
      setWaiting('InvalidImageName', image.message);
      await untilAborted(ctx.signal);
      return undefined;
    }
    if (image.kind === 'unpullable') {
      setWaiting('ErrImagePull', image.message);
      await ctx.flush();
      await waitOrStop(ctx.backoff.initialMs * 2, ctx.signal);
      if (ctx.signal.aborted) return undefined;
      setWaiting('ImagePullBackOff', imagePullBackOffMessage(spec.image ?? ''));
      await waitOrStop(pullDelayMs, ctx.signal);
      pullDelayMs = Math.min(pullDelayMs * 2, ctx.backoff.maxMs);
      continue;
    }
    record.imageID = image.imageID;
    const command = containerArgv(spec, ctx.imageMap);
    if (!command.ok) {
      setWaiting('CreateContainerError', command.message);
      await untilAborted(ctx.signal);
      return undefined;
    }
    const env = await resolveEnv(ctx, spec);
    if (!env.ok) {
      setWaiting('CreateContainerConfigError', env.message);
      await waitOrStop(configDelayMs, ctx.signal);
      configDelayMs = Math.min(configDelayMs * 2, ctx.backoff.maxMs);
      continue;
    }
    return start(ctx, spec, record, { argv: command.argv, requires: command.requires, env: env.env });
  }
  return undefined;
}

/** The prelude's own failure (a mount that did not work): its `khrun: ...` line, as a StartError. */
async function preludeFailure(logFile: string): Promise<string | undefined> {
  const tail = (await readTail(logFile, 1024)).toString('utf8').trimEnd();
  const last = tail.slice(tail.lastIndexOf('\n') + 1);
  return last.startsWith(PRELUDE_MARKER) ? last.slice(PRELUDE_MARKER.length) : undefined;
}

async function resolveEnv(ctx: RunnerContext, spec: V1Container) {
  const pod = ctx.pod();
  const namespace = pod.metadata?.namespace ?? '';
  const refs = referencedEnvObjects(spec);
  const decode = (data: Record<string, Buffer> | undefined) =>
    data && Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString('utf8')]));
  try {
    const objects: EnvObjects = {
      configMaps: new Map(
        await Promise.all(
          refs.configMaps.map(async (n) => [n, decode(await ctx.api.readConfigMap(namespace, n))] as const),
        ),
      ),
      secrets: new Map(
        await Promise.all(
          refs.secrets.map(async (n) => [n, decode(await ctx.api.readSecret(namespace, n))] as const),
        ),
      ),
    };
    return resolveContainerEnv(
      spec,
      {
        pod,
        podIp: ctx.sandbox.podIp,
        hostIp: ctx.hostIp,
        apiServer: ctx.apiServer,
        imageNodePath: ctx.imageNodePath,
      },
      objects,
    );
  } catch (error) {
    return { ok: false as const, message: apiErrorMessage(error) };
  }
}

async function start(
  ctx: RunnerContext,
  spec: V1Container,
  record: ContainerRecord,
  launch: {
    argv: string[];
    requires: ReadonlyArray<{ path: string; message: string }>;
    env: Array<[string, string]>;
  },
): Promise<Terminated> {
  const pod = ctx.pod();
  const logFile = containerLogPath(ctx.podDir, spec.name, record.restartCount);
  const messageFile = terminationMessagePath(ctx.podDir, spec.name);
  const startedAt = new Date();
  let proc: ContainerProcess;
  try {
    await mkdir(join(ctx.podDir, 'logs', spec.name), { recursive: true });
    await mkdir(join(ctx.podDir, 'containers', spec.name), { recursive: true });
    await mkdir(join(ctx.podDir, 'cwd'), { recursive: true });
    await writeFile(messageFile, '');
    // A file the image's command needs (khrun's bundle) fails the start as a missing binary would.
    for (const need of launch.requires)
      await access(need.path).catch(() => Promise.reject(new Error(need.message)));
    proc = await spawnContainer(
      {
        netns: ctx.sandbox.netns,
        hostname: podHostname(pod),
        argv: launch.argv,
        env: launch.env,
        workingDir: spec.workingDir || join(ctx.podDir, 'cwd'),
        ownWorkingDir: !spec.workingDir,
        mounts: planMounts(spec, ctx.volumes, messageFile),
        logFile,
      },
      ctx.tools,
      ctx.hostPaths,
      ctx.spawner,
    );
  } catch (error) {
    const now = apiTime(new Date());
    const terminated: Terminated = {
      kind: 'terminated',
      exitCode: 128,
      reason: 'StartError',
      message: error instanceof Error ? error.message : String(error),
      startedAt: '1970-01-01T00:00:00Z',
      finishedAt: now,
    };
    record.state = terminated;
    ctx.changed();
    return terminated;
  }
  const processStartedAtMs = Date.now();
  const untrack = ctx.track(spec.name, proc);
  record.state = { kind: 'running', startedAt: apiTime(startedAt), pid: proc.pid };
  ctx.changed();
  const exit = await proc.exited.catch(() => ({ exitCode: 128, signal: undefined }));
  const processExitedAtMs = Date.now();
  untrack();
  const message = await terminationMessage({
    messageFile,
    logFile,
    policy: spec.terminationMessagePolicy,
    exitCode: exit.exitCode,
  });
  const startError = exit.exitCode === PRELUDE_FAILED ? await preludeFailure(logFile) : undefined;
  const terminated: Terminated = {
    kind: 'terminated',
    exitCode: exit.exitCode,
    ...(exit.signal ? { signal: exit.signal } : {}),
    reason: startError ? 'StartError' : exit.exitCode === 0 ? 'Completed' : 'Error',
    ...(startError || message ? { message: startError ?? message } : {}),
    startedAt: apiTime(startedAt),
    finishedAt: apiTime(new Date()),
    pid: proc.pid,
    processStartedAtMs,
    processExitedAtMs,
  };
  record.state = terminated;
  ctx.changed();
  return terminated;
}
