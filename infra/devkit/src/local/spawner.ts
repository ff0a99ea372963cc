import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A process the spawner started; `exited` rejects only when the spawner itself ended first. */
export interface StartedProcess {
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartRequest {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** stdout and stderr are appended here. */
  logFile: string;
}

/** What `run` captured; `error` is set when the command failed or could not start. */
export interface RunResult {
  error?: string;
  stdout: string;
  stderr: string;
}

type Reply =
  | { id: number; type: 'started'; pid: number }
  | { id: number; type: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { id: number; type: 'error'; message: string }
  | { id: number; type: 'ran'; error?: string; stdout: string; stderr: string };

interface Pending {
  onReply(reply: Reply): void;
  /** The spawner ended before this request's last reply. */
  onLost(error: Error): void;
}

const PROGRAM = fileURLToPath(new URL('./spawner-process.mjs', import.meta.url));

/**
 * Starts processes from a small helper process (spawner-process.mjs) instead of this one. Forking costs
 * in proportion to the forking process's memory and holds its thread until the child has exec'd: the
 * process kubelet, hundreds of MiB with a thousand pods, spent ~15 ms of kernel time per spawn and its
 * thread waited in each; the helper forks for ~2 ms and the kubelet's thread goes on. The helper starts
 * with the first request; if it ends, pending requests fail and the next request starts a new one.
 * Processes are signalled directly by pid (`process.kill`), not through the helper.
 */
export class Spawner {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  /** Starts a detached process (its own session) with its output appended to a log file. */
  start(request: StartRequest): Promise<StartedProcess> {
    return new Promise((resolve, reject) => {
      let exit!: { resolve: (v: { code: number | null; signal: NodeJS.Signals | null }) => void };
      let lost!: (error: Error) => void;
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res, rej) => {
        exit = { resolve: res };
        lost = rej;
      });
      let started = false;
      this.send({ op: 'start', ...request }, (id) => ({
        onReply: (reply) => {
          if (reply.type === 'started') {
            started = true;
            resolve({ pid: reply.pid, exited });
          } else if (reply.type === 'exit') {
            this.pending.delete(id);
            exit.resolve({ code: reply.code, signal: reply.signal });
          } else if (reply.type === 'error') {
            this.pending.delete(id);
            reject(new Error(reply.message));
          }
        },
        onLost: (error) => {
          if (started) lost(error);
          else reject(error);
        },
      }));
      exited.catch(() => undefined); // a caller that never waits on it must not see an unhandled rejection
    });
  }

  /** Runs a command to its end and captures its output (execFile in the helper). */
  run(command: string, args: string[]): Promise<RunResult> {
    return new Promise((resolve) => {
      this.send({ op: 'run', command, args }, (id) => ({
        onReply: (reply) => {
          this.pending.delete(id);
          if (reply.type === 'ran')
            resolve({ error: reply.error, stdout: reply.stdout, stderr: reply.stderr });
          else
            resolve({
              error: reply.type === 'error' ? reply.message : 'unexpected reply',
              stdout: '',
              stderr: '',
            });
        },
        onLost: (error) => resolve({ error: error.message, stdout: '', stderr: '' }),
      }));
    });
  }

  /** The helper's pid while it runs. */
  get helperPid(): number | undefined {
    return this.child?.pid;
  }

  /** Ends the helper; processes it started in their own session live on. Later requests fail. */
  close(): void {
    this.closed = true;
    this.child?.disconnect();
    this.child = undefined;
  }

  private send(message: Record<string, unknown>, pending: (id: number) => Pending): void {
    const id = this.nextId++;
    const entry = pending(id);
    if (this.closed) {
      entry.onLost(new Error('the spawner is closed'));
      return;
    }
    this.pending.set(id, entry);
    this.ensureChild().send({ ...message, id }, (error) => {
      if (error && this.pending.delete(id)) entry.onLost(error);
    });
  }

  private ensureChild(): ChildProcess {
    if (this.child) return this.child;
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // no preloads: the point is a small process
    const child = spawn(process.execPath, [PROGRAM], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
    child.on('message', (reply: Reply) => this.pending.get(reply.id)?.onReply(reply));
    const ended = (why: string) => {
      if (this.child === child) this.child = undefined;
      const lost = [...this.pending.values()];
      this.pending.clear();
      for (const entry of lost) entry.onLost(new Error(`the spawner process ended (${why})`));
    };
    child.once('error', (error) => ended(error.message));
    child.once('exit', (code, signal) => ended(signal ?? `exit ${code}`));
    // Pending requests keep nothing alive: the helper's owner decides how long it lives.
    child.unref();
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
    this.child = child;
    return child;
  }
}
