import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../local/free-port.ts';
import { readTail } from '../local/kubelet/logs.ts';
import type { LambdaRuntimeParts } from './emulator-binaries.ts';
import { type InvokeResult, invokeResult, parseReportLine, type ReportLine } from './invoke-result.ts';

/** One function as Lambda configures it: what serverless.yml (or a template) says, resolved. */
export interface FunctionConfig {
  /** The deployed name (`khrun-prod-runCheck`): AWS_LAMBDA_FUNCTION_NAME and the context's functionName. */
  functionName: string;
  /** `functions/lambda-run-check.handler`, resolved against taskRoot by the runtime interface client. */
  handler: string;
  /** `nodejs22.x`: AWS_EXECUTION_ENV, as the managed runtime sets it. */
  runtime: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** The function's environment variables (its configuration; credentials and region included). */
  environment: Record<string, string>;
}

export interface ExecutionEnvironment {
  readonly functionName: string;
  /** The emulator's invoke API: POST /2015-03-31/functions/function/invocations. */
  readonly invokeUrl: string;
  readonly logFile: string;
  /**
   * One synchronous invocation (RequestResponse), as `aws lambda invoke` makes it. One at a time: the
   * emulator refuses an invocation while another runs, as one execution environment does.
   */
  invoke(
    event: unknown,
    opts?: { requestId?: string; signal?: AbortSignal },
  ): Promise<InvokeResult & { runtimeStarted: boolean }>;
  /** Peak resident memory of the runtime process now running (VmHWM), MiB: Lambda's "Max Memory Used". */
  maxMemoryUsedMiB(): Promise<number | undefined>;
  /** Stops the emulator and the runtime (their process group). */
  stop(): Promise<void>;
}

/**
 * The runtime's bootstrap, as AWS's Node base image runs its runtime: V8's heap sized from the function's
 * memory (new space a tenth, semi space half of that, old space the rest), --expose-gc and an 80 KiB header
 * limit, then the runtime interface client. It records its pid first (exec keeps it) for maxMemoryUsedMiB.
 */
function bootstrapScript(parts: LambdaRuntimeParts, pidFile: string): string {
  return `#!/bin/sh
echo $$ > '${pidFile}'
new_space=$((AWS_LAMBDA_FUNCTION_MEMORY_SIZE / 10))
exec '${parts.node}' --expose-gc --max-http-header-size 81920 \\
  --max-semi-space-size=$((new_space / 2)) --max-old-space-size=$((AWS_LAMBDA_FUNCTION_MEMORY_SIZE - new_space)) \\
  '${parts.ric}'
`;
}

/** How many times an environment's emulator is started before its start fails. */
const EMULATOR_START_ATTEMPTS = 3;

class EmulatorExitedError extends Error {
  constructor() {
    super('the emulator exited before it served');
  }
}

/** The end of a log on one line, for an error message (the log may be removed with its dir). */
async function logTail(file: string): Promise<string> {
  return JSON.stringify((await readTail(file, 600)).toString('utf8').trim().split('\n').join(' | '));
}

async function waitForPort(port: number, deadlineMs: number, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 200)) {
    if (gone) throw new EmulatorExitedError();
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadlineMs) throw new Error(`the emulator did not listen on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, delayMs));
  }
}

/**
 * Starts one execution environment: AWS's Runtime Interface Emulator on 127.0.0.1 running the function's
 * bootstrap (Node and aws-lambda-ric) in taskRoot, with the function's timeout and memory
 * (AWS_LAMBDA_FUNCTION_TIMEOUT, AWS_LAMBDA_FUNCTION_MEMORY_SIZE, which the emulator reads) and only the
 * environment Lambda would give it (no variable of this process leaks in but PATH). The runtime starts on
 * the first invocation (the cold start), and again after a timeout or a failed invocation (the emulator
 * resets the environment then, as Lambda does).
 */
export async function startExecutionEnvironment(opts: {
  parts: LambdaRuntimeParts;
  taskRoot: string;
  config: FunctionConfig;
  logFile: string;
}): Promise<ExecutionEnvironment> {
  const { config } = opts;
  const dir = await mkdtemp(join(tmpdir(), 'khrun-lambda-env-'));
  const pidFile = join(dir, 'runtime.pid');
  const bootstrap = join(dir, 'bootstrap');
  await writeFile(bootstrap, bootstrapScript(opts.parts, pidFile));
  await chmod(bootstrap, 0o755);
  const region = config.environment.AWS_REGION ?? 'eu-west-1';
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    ...config.environment,
    AWS_LAMBDA_FUNCTION_NAME: config.functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_TIMEOUT: String(config.timeoutSeconds),
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(config.memoryMb),
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${config.functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: '$LATEST',
    AWS_EXECUTION_ENV: `AWS_Lambda_${config.runtime}`,
    LAMBDA_TASK_ROOT: opts.taskRoot,
    LAMBDA_RUNTIME_DIR: dir,
  };
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  await once(log, 'open');
  // REPORT lines (stdout) are kept until the invocation that waits for them takes them.
  const reports = new Map<string, ReportLine>();
  const waiters = new Map<string, (r: ReportLine) => void>();
  const spawnEmulator = async () => {
    const [invokePort, runtimeApiPort] = [await freePort(), await freePort()];
    // The emulator's own convention (its README): the bootstrap command, then the handler as the last word.
    const child = spawn(
      opts.parts.rie,
      [
        '--runtime-interface-emulator-address',
        `127.0.0.1:${invokePort}`,
        '--runtime-api-address',
        `127.0.0.1:${runtimeApiPort}`,
        bootstrap,
        config.handler,
      ],
      { cwd: opts.taskRoot, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.once('error', (e) => {
      if (!log.writableEnded) log.write(`spawn failed: ${e.message}\n`);
    });
    child.stderr.pipe(log, { end: false });
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!log.writableEnded) log.write(`${line}\n`);
      const report = parseReportLine(line);
      if (!report) return;
      const waiter = waiters.get(report.requestId);
      if (waiter) waiter(report);
      else reports.set(report.requestId, report);
    });
    const kill = async () => {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
        await exited;
      }
    };
    return { invokePort, exited, kill };
  };
  const reportOf = (requestId: string, timeoutMs: number) =>
    new Promise<ReportLine | undefined>((resolve) => {
      const ready = reports.get(requestId);
      if (ready) return resolve(ready);
      const timer = setTimeout(() => {
        waiters.delete(requestId);
        resolve(undefined);
      }, timeoutMs);
      waiters.set(requestId, (r) => {
        clearTimeout(timer);
        waiters.delete(requestId);
        resolve(r);
      });
    });
  // The ports were free when asked for, but another process may bind one first (an outgoing connection's
  // ephemeral port, an environment starting beside this one): the emulator then exits before it serves,
  // and it is started again on fresh ports, at most EMULATOR_START_ATTEMPTS times in all.
  let emulator: Awaited<ReturnType<typeof spawnEmulator>> | undefined;
  for (let attempt = 1; !emulator; attempt++) {
    const candidate = await spawnEmulator();
    try {
      await waitForPort(candidate.invokePort, Date.now() + 30_000, candidate.exited);
      emulator = candidate;
    } catch (error) {
      await candidate.kill();
      const early = error instanceof EmulatorExitedError;
      if (early && attempt < EMULATOR_START_ATTEMPTS) {
        log.write(
          `khrun: the emulator exited before it served (attempt ${attempt}); starting it on fresh ports\n`,
        );
        continue;
      }
      await new Promise<void>((resolve) => log.end(() => resolve()));
      await rm(dir, { recursive: true, force: true });
      const tail = early ? ` after ${attempt} attempts; its log ends: ${await logTail(opts.logFile)}` : '';
      throw new Error(`${config.functionName}: ${(error as Error).message}${tail} (log: ${opts.logFile})`);
    }
  }
  const started = emulator;
  const stop = async () => {
    await started.kill();
    log.end();
    await rm(dir, { recursive: true, force: true });
  };
  const invokePort = started.invokePort;
  const runtimePid = async () =>
    Number((await readFile(pidFile, 'utf8').catch(() => '')).trim()) || undefined;
  const invokeUrl = `http://127.0.0.1:${invokePort}/2015-03-31/functions/function/invocations`;
  let sequence = 0;
  return {
    functionName: config.functionName,
    invokeUrl,
    logFile: opts.logFile,
    async invoke(event, invokeOpts = {}) {
      const pidBefore = await runtimePid();
      const requestId = invokeOpts.requestId ?? `${config.functionName}-${process.pid}-${++sequence}`;
      const startedMs = performance.now();
      const res = await fetch(invokeUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-amzn-requestid': requestId },
        body: JSON.stringify(event ?? null),
        signal: invokeOpts.signal,
      });
      const body = await res.text();
      const clientMs = performance.now() - startedMs;
      const report = await reportOf(requestId, 5_000);
      // The bootstrap writes its pid when the emulator starts a runtime: at the first invocation, and at the
      // next one after a timeout or a crash (the emulator replaced the runtime).
      const runtimeStarted = (await runtimePid()) !== pidBefore;
      return {
        ...invokeResult({ requestId, statusCode: res.status, body, clientMs, report }),
        runtimeStarted,
      };
    },
    async maxMemoryUsedMiB() {
      const pid = await runtimePid();
      if (!pid) return undefined;
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
      return Number.isFinite(kb) && kb > 0 ? kb / 1024 : undefined;
    },
    stop,
  };
}
