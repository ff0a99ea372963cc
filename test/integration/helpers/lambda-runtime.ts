import { mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { buildBundles, discoverEntries } from '@khrun/devkit/build/bundle.ts';
import { type LambdaRuntimeParts, resolveLambdaRuntime } from '@khrun/devkit/lambda/emulator-binaries.ts';
import type { FunctionConfig } from '@khrun/devkit/lambda/execution-environment.ts';
import { serveFunctionUrl } from '@khrun/devkit/lambda/function-url.ts';
import { serveInvokeApi } from '@khrun/devkit/lambda/invoke-api.ts';
import { type LambdaFunction, lambdaFunction } from '@khrun/devkit/lambda/lambda-function.ts';
import { repoRoot } from './khrun.ts';
import { type ServerlessFunction, serverlessFunctions } from './serverless-functions.ts';

// khrun's Lambda functions run the way AWS runs them: the package serverless-esbuild makes (the handlers'
// bundles at functions/lambda-*.mjs, built with the project's esbuild options, which serverless.yml's
// custom.esbuild repeats; test/unit/lambda-serverless.test.ts holds them equal), each function in AWS's
// Runtime Interface Emulator with the Node runtime interface client, configured from serverless.yml.

export type KhrunFunction = 'runCheck' | 'tick' | 'trigger' | 'report' | 'status';

function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

/** The emulator, Node 22 and aws-lambda-ric, built or installed into ~/.cache/khrun the first time. */
export function lambdaRuntimeParts(onProgress?: (line: string) => void): Promise<LambdaRuntimeParts> {
  return resolveLambdaRuntime({ cacheDir: cacheDir(), root: repoRoot, onProgress });
}

/**
 * The deployment package's layout: every handler's bundle at the path its handler string names
 * (functions/lambda-run-check.mjs for `functions/lambda-run-check.handler`), built with the project's
 * esbuild options into `<outdir>/functions`.
 */
export async function buildLambdaPackage(outdir: string): Promise<string> {
  const entries = (await discoverEntries(repoRoot))
    .filter((e) => e.name.startsWith('lambda-'))
    .map((e) => ({ ...e, name: `functions/${e.name}` }));
  await mkdir(join(outdir, 'functions'), { recursive: true });
  await buildBundles({ root: repoRoot, outdir, entries });
  return outdir;
}

export interface KhrunLambdaOptions {
  parts: LambdaRuntimeParts;
  /** The package (buildLambdaPackage). */
  taskRoot: string;
  logDir: string;
  /** serverless.yml --param overrides. */
  params?: Record<string, string>;
  /** Set in every function: cluster access (KUBECONFIG), credentials, the Invoke API's endpoint is added. */
  environment: Record<string, string>;
  /** Per function: its timeout, or variables set (a string) or removed (undefined) after serverless.yml's. */
  overrides?: Partial<
    Record<KhrunFunction, { timeoutSeconds?: number; environment?: Record<string, string | undefined> }>
  >;
  /** The address checker pods reach the report function's URL on (the pod network's host address). */
  reportHost: string;
  /** Execution environments per function (default: its reserved concurrency, else 4). */
  maxEnvironments?: number;
}

export interface KhrunLambdas {
  fn(name: KhrunFunction): LambdaFunction;
  /** serverless.yml's configuration of each function, as resolved here. */
  configs: ReadonlyMap<KhrunFunction, ServerlessFunction>;
  /** The report function's URL (AuthType NONE), ending in a slash. */
  reportUrl: string;
  /** Lambda's Invoke API, which tick and trigger call (KHRUN_LAMBDA_ENDPOINT). */
  invokeApi: Awaited<ReturnType<typeof serveInvokeApi>>;
  stop(): Promise<void>;
}

const STAGE = 'prod';

/** `khrun-prod-runCheck`: the name Serverless gives a function (service-stage-function). */
export const deployedName = (fn: string) => `khrun-${STAGE}-${fn}`;

/** Starts khrun's five functions from serverless.yml; execution environments start on first invocation. */
export async function startKhrunLambdas(opts: KhrunLambdaOptions): Promise<KhrunLambdas> {
  const text = await readFile(join(repoRoot, 'serverless.yml'), 'utf8');
  const functions = new Map<string, LambdaFunction>();
  await mkdir(opts.logDir, { recursive: true });
  const invokeApi = await serveInvokeApi(functions);
  // The report function's URL is served first: runCheck's configuration names it.
  const reportUrl = await serveFunctionUrl(
    { invoke: (event) => functions.get(deployedName('report'))!.invoke(event) },
    opts.reportHost,
  );
  const configs = serverlessFunctions(text, {
    stage: STAGE,
    params: opts.params,
    resources: ({ kind, name }) => {
      if (kind === 'Ref' && name === 'RunCheckLambdaFunction') return deployedName('runCheck');
      if (kind === 'GetAtt' && name === 'ReportLambdaFunctionUrl.FunctionUrl') return reportUrl.url;
      throw new Error(`serverless.yml: no local stand-in for ${kind} ${name}`);
    },
  }) as Map<KhrunFunction, ServerlessFunction>;
  for (const [name, sls] of configs) {
    const override = opts.overrides?.[name] ?? {};
    const environment: Record<string, string> = {
      ...sls.environment,
      ...opts.environment,
      KHRUN_LAMBDA_ENDPOINT: invokeApi.endpoint,
    };
    for (const [k, v] of Object.entries(override.environment ?? {})) {
      if (v === undefined) delete environment[k];
      else environment[k] = v;
    }
    const config: FunctionConfig = {
      functionName: deployedName(name),
      handler: sls.handler,
      runtime: sls.runtime,
      timeoutSeconds: override.timeoutSeconds ?? sls.timeoutSeconds,
      memoryMb: sls.memoryMb,
      environment,
    };
    functions.set(
      config.functionName,
      lambdaFunction({
        parts: opts.parts,
        taskRoot: opts.taskRoot,
        config,
        logDir: opts.logDir,
        // Lambda runs at most the reserved concurrency at once; the others, a few here.
        maxEnvironments: opts.maxEnvironments ?? sls.reservedConcurrency ?? 4,
      }),
    );
  }
  return {
    fn: (name) => {
      const fn = functions.get(deployedName(name));
      if (!fn) throw new Error(`serverless.yml has no function ${name}`);
      return fn;
    },
    configs,
    reportUrl: reportUrl.url,
    invokeApi,
    async stop() {
      await Promise.all([...functions.values()].map((f) => f.stop()));
      await Promise.all([reportUrl.close(), invokeApi.close()]);
    },
  };
}
