import { describe, expect, it } from 'vitest';
import { createBuildProgress, EXPECTED_PACKAGES, progressLine } from '../src/local/go-build.ts';

// The first `khrun local up` builds the control plane for minutes: on a terminal one updating line with a
// bar and an estimate, piped the plain lines a log keeps.

describe('progressLine: packages compiled, expected total, elapsed time → one line', () => {
  it.each([
    [{ done: 0, total: 1700, elapsedMs: 4_000 }, '[----------] 0/~1700 packages, 4s'],
    [{ done: 412, total: 1700, elapsedMs: 190_000 }, '[##--------] 412/~1700 packages, 3m10s, ~10m left'],
    [{ done: 850, total: 1700, elapsedMs: 120_000 }, '[#####-----] 850/~1700 packages, 2m0s, ~2m left'],
    [{ done: 1600, total: 1700, elapsedMs: 240_000 }, '[#########-] 1600/~1700 packages, 4m0s, ~15s left'],
    [{ done: 1750, total: 1700, elapsedMs: 250_000 }, '[##########] 1750/~1700 packages, 4m10s, almost done'],
    // Too early for an estimate: the first packages are the standard library's, quicker than the rest.
    [{ done: 5, total: 1700, elapsedMs: 3_000 }, '[----------] 5/~1700 packages, 3s'],
    // No expected count for this target: the count and the time only.
    [{ done: 412, total: undefined, elapsedMs: 3_723_000 }, '412 packages, 1h2m'],
  ])('%j → %s', (input, line) => {
    expect(progressLine(input)).toBe(line);
  });

  it('knows the expected package count of every target the local cluster builds', () => {
    for (const pkg of [
      'go.etcd.io/etcd/server/v3',
      'k8s.io/kubernetes/cmd/kube-apiserver',
      'k8s.io/kubernetes/cmd/kube-controller-manager',
      'k8s.io/kubernetes/cmd/kube-scheduler',
      'k8s.io/kubernetes/cmd/kubectl',
    ]) {
      expect(EXPECTED_PACKAGES[pkg], pkg).toBeGreaterThan(100);
    }
  });
});

function harness(isTTY: boolean | undefined) {
  let now = 1_000_000;
  const lines: string[] = [];
  const writes: string[] = [];
  const progress = createBuildProgress({
    pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
    onProgress: (line) => lines.push(line),
    terminal: isTTY === undefined ? undefined : { isTTY, write: (text) => writes.push(text) },
    nowMs: () => now,
  });
  return {
    progress,
    lines,
    writes,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('createBuildProgress: a bar on a terminal, plain lines when piped', () => {
  it('on a terminal: one line redrawn in place, at most every 250 ms, cleared at the end', () => {
    const h = harness(true);
    h.advance(1_000);
    h.progress.compiled();
    h.advance(100);
    h.progress.compiled(); // within 250 ms of the last draw: counted, not drawn
    h.advance(200);
    h.progress.compiled();
    expect(h.writes).toEqual([
      `\r\u001b[2K[----------] 1/~${EXPECTED_PACKAGES['k8s.io/kubernetes/cmd/kube-apiserver']} packages, 1s`,
      `\r\u001b[2K[----------] 3/~${EXPECTED_PACKAGES['k8s.io/kubernetes/cmd/kube-apiserver']} packages, 1s`,
    ]);
    for (let i = 0; i < 200; i++) h.progress.compiled();
    h.advance(60_000);
    h.progress.finish();
    expect(h.lines).toEqual(['  built k8s.io/kubernetes/cmd/kube-apiserver in 61s']);
    expect(h.writes.at(-1)).toBe('\r\u001b[2K');
  });

  it.each([
    ['piped', false],
    ['no terminal given', undefined],
  ])('%s: a plain line per 100 packages, nothing redrawn', (_, isTTY) => {
    const h = harness(isTTY);
    for (let i = 0; i < 250; i++) {
      h.advance(100);
      h.progress.compiled();
    }
    h.progress.finish();
    expect(h.lines).toEqual([
      '  k8s.io/kubernetes/cmd/kube-apiserver: 100 packages compiled (10s)',
      '  k8s.io/kubernetes/cmd/kube-apiserver: 200 packages compiled (20s)',
      '  built k8s.io/kubernetes/cmd/kube-apiserver in 25s',
    ]);
    expect(h.writes).toEqual([]);
  });

  it('a failed build clears the bar before the error is printed', () => {
    const h = harness(true);
    h.progress.compiled();
    h.progress.abandon();
    expect(h.writes.at(-1)).toBe('\r\u001b[2K');
    expect(h.lines).toEqual([]);
  });
});
