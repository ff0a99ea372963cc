import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The installed Go version, or undefined when there is no go command. */
export async function goVersion(): Promise<string | undefined> {
  try {
    const { stdout } = await run('go', ['version']);
    return stdout.trim();
  } catch {
    return undefined;
  }
}

/**
 * How many packages `go build -v` of each target compiles on a cold build cache: `go list -deps` of the
 * pinned versions (infra/build/*, Go 1.26, CGO_ENABLED=0), counted on 2026-12-01. An estimate: a warm
 * cache (a target built after another, which shares the standard library and client-go) compiles fewer,
 * and the bar then ends early. Measured cold builds compiled about 560 packages for etcd and 1,750 for
 * kube-apiserver after etcd. Count again after a version bump:
 * `cd infra/build/kubernetes && go list -deps k8s.io/kubernetes/cmd/kube-apiserver | wc -l`.
 */
export const EXPECTED_PACKAGES: Readonly<Record<string, number>> = {
  'go.etcd.io/etcd/server/v3': 581,
  'k8s.io/kubernetes/cmd/kube-apiserver': 2029,
  'k8s.io/kubernetes/cmd/kube-controller-manager': 2409,
  'k8s.io/kubernetes/cmd/kube-scheduler': 1417,
  'k8s.io/kubernetes/cmd/kubectl': 895,
  'helm.sh/helm/v3/cmd/helm': 964,
  'github.com/prometheus/alertmanager/cmd/alertmanager': 751,
  // With -tags remove_all_sd (resolvePrometheusTool), counted on 2026-12-03.
  'github.com/prometheus/prometheus/cmd/promtool': 1116,
  'github.com/prometheus/prometheus/cmd/prometheus': 1043,
};

/** Below this many packages the rate is the standard library's (quicker than the rest): no estimate yet. */
const MIN_PACKAGES_FOR_ESTIMATE = 20;
const BAR_WIDTH = 10;

/** 45s, 3m10s, 1h2m. */
function clock(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** ~40s, ~4m: a remaining time, as round as an estimate deserves. */
function estimate(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `~${s}s` : `~${Math.round(s / 60)}m`;
}

/**
 * One progress line (pure): `[##--------] 412/~1700 packages, 3m10s, ~10m left`. The remaining time
 * assumes the rate so far holds; without an expected total, the count and the time only.
 */
export function progressLine(p: { done: number; total: number | undefined; elapsedMs: number }): string {
  const elapsed = clock(p.elapsedMs);
  if (p.total === undefined) return `${p.done} packages, ${elapsed}`;
  const filled = Math.min(BAR_WIDTH, Math.round((p.done / p.total) * BAR_WIDTH));
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
  const line = `${bar} ${p.done}/~${p.total} packages, ${elapsed}`;
  if (p.done >= p.total) return `${line}, almost done`;
  if (p.done < MIN_PACKAGES_FOR_ESTIMATE) return line;
  return `${line}, ${estimate((p.elapsedMs * (p.total - p.done)) / p.done)} left`;
}

/** Where a person watches: is it a terminal, and how to write to it (no newline added). */
export interface Terminal {
  isTTY: boolean;
  write: (text: string) => void;
}

/** Erase the line the cursor is on and go back to its start. */
const CLEAR_LINE = '\r\u001b[2K';
const REDRAW_MS = 250;

/**
 * The progress of one build: on a terminal, one line redrawn in place (at most every 250 ms) and cleared
 * when the build ends; otherwise (piped, a log) a plain line per 100 packages. finish() reports the
 * build's time through onProgress either way; abandon() (a failed build) only clears the bar.
 */
export function createBuildProgress(opts: {
  pkg: string;
  onProgress: (line: string) => void;
  terminal?: Terminal;
  nowMs?: () => number;
}) {
  const now = opts.nowMs ?? Date.now;
  const startedMs = now();
  const live = opts.terminal?.isTTY ? opts.terminal : undefined;
  const total = EXPECTED_PACKAGES[opts.pkg];
  let done = 0;
  let drawnAtMs: number | undefined;
  const clear = () => {
    if (live && drawnAtMs !== undefined) live.write(CLEAR_LINE);
    drawnAtMs = undefined;
  };
  return {
    /** One more package compiled. */
    compiled() {
      done++;
      const t = now();
      if (live) {
        if (drawnAtMs !== undefined && t - drawnAtMs < REDRAW_MS) return;
        drawnAtMs = t;
        live.write(`${CLEAR_LINE}${progressLine({ done, total, elapsedMs: t - startedMs })}`);
      } else if (done % 100 === 0) {
        opts.onProgress(`  ${opts.pkg}: ${done} packages compiled (${Math.round((t - startedMs) / 1000)}s)`);
      }
    },
    finish() {
      clear();
      opts.onProgress(`  built ${opts.pkg} in ${Math.round((now() - startedMs) / 1000)}s`);
    },
    abandon: clear,
  };
}

/**
 * `go build` of one package from a committed wrapper module, static and trimmed as upstream builds it.
 * Progress: `-v` prints each package as it is compiled; createBuildProgress shows them as a bar on a
 * terminal (`terminal`, injected: lib reads no process globals for it) or as a line per 100 packages.
 */
export async function goBuild(opts: {
  moduleDir: string;
  pkg: string;
  output: string;
  ldflags: string;
  /** A go.mod to use instead of the module's own (`-modfile`; its go.sum beside it). */
  modfile?: string;
  /** Build tags (`-tags`), e.g. to leave out what a test never uses. */
  tags?: readonly string[];
  onProgress: (line: string) => void;
  terminal?: Terminal;
  signal?: AbortSignal;
}): Promise<void> {
  const progress = createBuildProgress({
    pkg: opts.pkg,
    onProgress: opts.onProgress,
    terminal: opts.terminal,
  });
  const child = spawn(
    'go',
    [
      'build',
      '-v',
      '-trimpath',
      ...(opts.modfile ? ['-modfile', opts.modfile] : []),
      ...(opts.tags?.length ? ['-tags', opts.tags.join(',')] : []),
      '-ldflags',
      opts.ldflags,
      '-o',
      opts.output,
      opts.pkg,
    ],
    {
      cwd: opts.moduleDir,
      env: { ...process.env, CGO_ENABLED: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: opts.signal,
    },
  );
  const tail: string[] = [];
  const lines = createInterface({ input: child.stderr });
  lines.on('line', (line) => {
    tail.push(line);
    if (tail.length > 30) tail.shift();
    if (!/^go: downloading /.test(line)) progress.compiled();
  });
  child.stdout.resume();
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).catch((error: unknown) => {
    progress.abandon();
    throw error;
  });
  if (code !== 0) {
    progress.abandon();
    throw new Error(`go build ${opts.pkg} failed (exit ${code}):\n${tail.join('\n')}`);
  }
  progress.finish();
}
