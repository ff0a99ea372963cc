import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi, type KubeConfig, type V1Container, type V1PodSpec } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { isNotFound } from '../../../lib/kube/errors.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhCheck,
  type KhState,
} from '../../../lib/state/resources.ts';

export const repoRoot = resolve(import.meta.dirname, '../../..');
const co = { group: KH_GROUP, version: KH_VERSION };

/** A khcheck whose pod runs the given containers. */
export async function createCheck(
  kc: KubeConfig,
  namespace: string,
  name: string,
  podSpec: V1PodSpec,
  spec: {
    timeout?: string;
    runInterval?: string;
    extraLabels?: Record<string, string>;
    extraAnnotations?: Record<string, string>;
  } = {},
): Promise<KhCheck> {
  const body: KhCheck = {
    apiVersion: `${KH_GROUP}/${KH_VERSION}`,
    kind: 'KuberhealthyCheck',
    metadata: { name, namespace },
    spec: { runInterval: spec.runInterval ?? '10m', timeout: spec.timeout ?? '60s', podSpec, ...spec },
  };
  return (await kc
    .makeApiClient(CustomObjectsApi)
    .createNamespacedCustomObject({ ...co, plural: KHCHECK_PLURAL, namespace, body })) as KhCheck;
}

export async function readState(kc: KubeConfig, namespace: string, name: string): Promise<KhState | null> {
  try {
    return (await kc
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...co, plural: KHSTATE_PLURAL, namespace, name })) as KhState;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** A container running a Node.js program (the host's node: the process kubelet runs commands, not images). */
export function nodeContainer(script: string, extra: Partial<V1Container> = {}): V1Container {
  return { name: 'check', image: 'node:20-alpine', command: [process.execPath, '-e', script], ...extra };
}

/** The npm `kuberhealthy` client, resolvable by a checker pod through NODE_PATH (as a check image would ship it). */
export const npmClientEnv = [{ name: 'NODE_PATH', value: join(repoRoot, 'node_modules') }];

export interface KhrunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts the real entrypoint, `khrun run`, against the test cluster. */
export function startKhrun(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; done: Promise<KhrunResult> } {
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), 'run', ...args], {
    env: {
      ...process.env,
      KUBECONFIG: inject('kubeconfigPath'),
      KHRUN_REPORT_HOST: inject('hostIp'),
      POWERTOOLS_LOG_LEVEL: 'INFO',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<KhrunResult>((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
  return { child, done };
}

export function runKhrun(args: string[], env: Record<string, string> = {}): Promise<KhrunResult> {
  return startKhrun(args, env).done;
}

/** The JSON line `khrun run --output json` prints last on stdout. */
export function outcomeOf(result: KhrunResult): Record<string, unknown> {
  const line = result.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"result"'))
    .pop();
  if (!line)
    throw new Error(`no JSON outcome in output (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  return JSON.parse(line) as Record<string, unknown>;
}

const run = promisify(execFile);

/**
 * A checker binary built on Kuberhealthy v2.7.1's Go checkclient (infra/build/go-checkclient), cached by the
 * hash of its go.sum and source so it is built once per machine.
 */
export async function goCheckerBinary(): Promise<string> {
  const moduleDir = join(repoRoot, 'infra/build/go-checkclient');
  const hash = createHash('sha256')
    .update(await readFile(join(moduleDir, 'go.sum')))
    .update(await readFile(join(moduleDir, 'main.go')))
    .digest('hex')
    .slice(0, 12);
  const cache =
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
  const out = join(cache, 'bin', `go-checkclient-${hash}`);
  try {
    await access(out);
    return out;
  } catch {
    await mkdir(join(cache, 'bin'), { recursive: true });
    await run('go', ['build', '-trimpath', '-o', out, '.'], {
      cwd: moduleDir,
      env: { ...process.env, CGO_ENABLED: '0' },
    });
    return out;
  }
}
