import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseGoDuration } from '../../lib/core/duration.ts';
import { createLogger, type LogLevel } from '../../lib/core/log.ts';
import { loadKubeConfig } from '../../lib/kube/load-config.ts';
import type { NamespaceScope } from '../../lib/kube/scope.ts';

/** What every command's flag parsing gets: the environment, output, and a usage failure (exit 2). */
export interface CliContext {
  root: string;
  env: NodeJS.ProcessEnv;
  write: (line: string) => void;
  /** Prints the message and the usage; returns exit code 2. */
  fail: (message: string) => number;
}

export function cacheDir(env: NodeJS.ProcessEnv): string {
  return env.KHRUN_CACHE_DIR || join(env.XDG_CACHE_HOME || join(env.HOME || '/root', '.cache'), 'khrun');
}

export function signalOnTermination(): AbortSignal {
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => controller.abort(new Error(`received ${sig}`)));
  }
  return controller.signal;
}

/** --namespaces A,B (or KHRUN_NAMESPACES); empty means every namespace. */
export function scopeFrom(flag: string | undefined, env: NodeJS.ProcessEnv): NamespaceScope {
  const list = (flag ?? env.KHRUN_NAMESPACES ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return list.length ? { namespaces: list } : 'all';
}

export function durationFlagMs(text: string | undefined, fallbackMs: number): number | undefined {
  if (text === undefined) return fallbackMs;
  const parsed = parseGoDuration(text);
  return parsed.ok && parsed.ns > 0 ? parsed.ns / 1e6 : undefined;
}

/** The kubeconfig kubectl would use, or a usage failure that says how to point khrun at a cluster. */
export function kubeConfigOrFail(
  ctx: CliContext,
  opts: { kubeconfig?: string; context?: string },
): KubeConfig | number {
  try {
    return loadKubeConfig(opts);
  } catch (error) {
    return ctx.fail((error as Error).message);
  }
}

export function loggerFor(env: NodeJS.ProcessEnv) {
  return createLogger({ level: (env.POWERTOOLS_LOG_LEVEL as LogLevel | undefined) ?? 'INFO' });
}

export const contextNamespace = (kc: KubeConfig) => kc.getContextObject(kc.getCurrentContext())?.namespace;
