import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildPrelude, isUnder, planMounts } from '../src/local/kubelet/container-process.ts';
import type { PreparedVolume } from '../src/local/kubelet/volumes.ts';
import { shellQuote } from '../src/local/shell-quote.ts';

const volumes = new Map<string, PreparedVolume>([
  ['data', { name: 'data', hostPath: '/state/pod/volumes/data', readOnly: false }],
  ['token', { name: 'token', hostPath: '/state/pod/volumes/token', readOnly: true }],
]);

describe('planMounts', () => {
  it('orders parents first, marks nested targets, honours subPath, readOnly and terminationMessagePath', () => {
    const mounts = planMounts(
      {
        name: 'c',
        terminationMessagePath: '/data/out/termination-log',
        volumeMounts: [
          { name: 'token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
          { name: 'data', mountPath: '/data/sub', subPath: 'x/y', readOnly: true },
          { name: 'data', mountPath: '/data' },
        ],
      },
      volumes,
      '/state/pod/containers/c/termination-log',
    );
    expect(mounts).toEqual([
      { source: '/state/pod/volumes/data', target: '/data', readOnly: false, nested: false },
      { source: '/state/pod/volumes/data/x/y', target: '/data/sub', readOnly: true, nested: true },
      {
        source: '/state/pod/containers/c/termination-log',
        target: '/data/out/termination-log',
        readOnly: false,
        nested: true,
      },
      {
        source: '/state/pod/volumes/token',
        target: '/var/run/secrets/kubernetes.io/serviceaccount',
        readOnly: true,
        nested: false,
      },
    ]);
  });

  it('defaults the termination message to /dev/termination-log', () => {
    expect(planMounts({ name: 'c' }, volumes, '/t')).toEqual([
      { source: '/t', target: '/dev/termination-log', readOnly: false, nested: false },
    ]);
  });

  it('rejects a mount of an unknown volume', () => {
    expect(() =>
      planMounts({ name: 'c', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }, volumes, '/t'),
    ).toThrow();
  });

  it('knows what lies under what', () => {
    expect(isUnder('/data/x', '/data')).toBe(true);
    expect(isUnder('/database', '/data')).toBe(false);
    expect(isUnder('/data', '/data')).toBe(false);
  });
});

describe('buildPrelude', () => {
  const prelude = buildPrelude({
    mounts: [
      { source: "/src/it's", target: '/dst dir', readOnly: true, nested: false, isFile: false },
      { source: '/f', target: '/dst dir/file', readOnly: false, nested: true, isFile: true },
    ],
    workingDir: '/dst dir/work',
    workingDirNested: true,
    hostname: 'pod-1',
  });

  it('is valid sh', () => {
    execFileSync('sh', ['-n', '-c', prelude]);
  });

  it('mounts, remounts read-only, creates nested targets, sets the hostname and execs the command', () => {
    expect(prelude).toContain(`mount --bind '/src/it'\\''s' '/dst dir'`);
    expect(prelude).toContain(`mount -o remount,bind,ro '/dst dir'`);
    expect(prelude).toContain(`touch '/dst dir/file'`);
    expect(prelude).toContain(`mkdir -p '/dst dir/work'`);
    expect(prelude).toContain(`> /proc/sys/kernel/hostname`);
    expect(prelude.trimEnd().endsWith('exec "$@"')).toBe(true);
  });

  it('runs the command with its arguments intact and the working directory set', () => {
    const script = buildPrelude({ mounts: [], workingDir: '/tmp', workingDirNested: false });
    const out = execFileSync('sh', [
      '-c',
      script,
      'khrun-container',
      'sh',
      '-c',
      'pwd; printf "%s|" "$@"',
      'x',
      'a b',
      "c'd",
    ]);
    expect(out.toString()).toBe("/tmp\na b|c'd|");
  });

  it('fails with exit 128 and a khrun: line when a step fails', () => {
    const script = buildPrelude({ mounts: [], workingDir: '/nonexistent/dir', workingDirNested: false });
    let status = 0;
    let stderr = '';
    try {
      execFileSync('sh', ['-c', script, 'khrun-container', 'true'], { stdio: 'pipe' });
    } catch (error) {
      status = (error as { status: number }).status;
      stderr = String((error as { stderr: Buffer }).stderr);
    }
    expect(status).toBe(128);
    expect(stderr).toContain('khrun: cannot enter working directory /nonexistent/dir');
  });

  it('quotes for sh', () => {
    expect(shellQuote("a'b")).toBe(`'a'\\''b'`);
  });
});
