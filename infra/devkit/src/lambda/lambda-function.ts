import { join } from 'node:path';
import type { LambdaRuntimeParts } from './emulator-binaries.ts';
import {
  type ExecutionEnvironment,
  type FunctionConfig,
  startExecutionEnvironment,
} from './execution-environment.ts';
import type { InvokeResult } from './invoke-result.ts';

/** One invocation of a function: its result, and whether it started a new execution environment. */
export interface FunctionInvocation extends InvokeResult {
  /** A new execution environment served it (its first invocation). */
  newEnvironment: boolean;
  /**
   * The runtime was started for it: a cold start. The first invocation of an environment, and the next one
   * after a timeout or a crash, which the emulator answers by starting the runtime again (as Lambda does).
   */
  runtimeStarted: boolean;
}

/**
 * A function as Lambda runs it: execution environments (each an emulator with its runtime) started on
 * demand, at most maxEnvironments at once, an idle one reused (warm) before another is started (cold).
 * Lambda's own placement is not emulated beyond that.
 */
export interface LambdaFunction {
  readonly config: FunctionConfig;
  invoke(event: unknown, opts?: { signal?: AbortSignal }): Promise<FunctionInvocation>;
  /** Every invocation so far, in the order they were made (including ones still running). */
  readonly invocations: ReadonlyArray<Promise<FunctionInvocation>>;
  /** The execution environments started so far. */
  readonly environments: ReadonlyArray<ExecutionEnvironment>;
  /** Stops every execution environment; a new invocation starts a new one (a cold start). */
  recycle(): Promise<void>;
  stop(): Promise<void>;
}

export function lambdaFunction(opts: {
  parts: LambdaRuntimeParts;
  taskRoot: string;
  config: FunctionConfig;
  /** Where each environment's log goes: `<logDir>/<functionName>-<n>.log`. */
  logDir: string;
  maxEnvironments?: number;
}): LambdaFunction {
  const max = opts.maxEnvironments ?? 4;
  const environments: ExecutionEnvironment[] = [];
  const idle: ExecutionEnvironment[] = [];
  const waiting: Array<() => void> = [];
  const invocations: Array<Promise<FunctionInvocation>> = [];
  let busy = 0;
  let started = 0;

  const acquire = async (): Promise<{ env: ExecutionEnvironment; fresh: boolean }> => {
    for (;;) {
      const env = idle.pop();
      if (env) return { env, fresh: false };
      if (busy < max) {
        busy++;
        try {
          const fresh = await startExecutionEnvironment({
            parts: opts.parts,
            taskRoot: opts.taskRoot,
            config: opts.config,
            logFile: join(opts.logDir, `${opts.config.functionName}-${++started}.log`),
          });
          environments.push(fresh);
          return { env: fresh, fresh: true };
        } catch (error) {
          busy--;
          throw error;
        }
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };

  const invokeOnce = async (event: unknown, signal?: AbortSignal): Promise<FunctionInvocation> => {
    const taken = await acquire();
    if (!taken.fresh) busy++;
    try {
      const result = await taken.env.invoke(event, { signal });
      return { ...result, newEnvironment: taken.fresh };
    } finally {
      busy--;
      if (environments.includes(taken.env)) idle.push(taken.env);
      waiting.shift()?.();
    }
  };

  const stopAll = async () => {
    const all = environments.splice(0);
    idle.splice(0);
    await Promise.all(all.map((e) => e.stop()));
  };

  return {
    config: opts.config,
    invocations,
    environments,
    invoke(event, invokeOpts = {}) {
      const p = invokeOnce(event, invokeOpts.signal);
      invocations.push(p);
      return p;
    },
    recycle: stopAll,
    stop: stopAll,
  };
}
