import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HostMountPoints } from '../src/local/kubelet/host-paths.ts';

describe('HostMountPoints', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const setup = async () => {
    const root = await mkdtemp(join(tmpdir(), 'kubelet-mounts-'));
    dirs.push(root);
    return { root, registry: join(root, 'run', 'registry') };
  };

  it('creates missing levels and removes exactly those, newest first', async () => {
    const { root, registry } = await setup();
    await mkdir(join(root, 'existing'));
    const points = new HostMountPoints(registry);
    await points.ensureDir(join(root, 'existing/a/b'));
    await points.ensureFile(join(root, 'dev/termination-log'));
    expect(existsSync(join(root, 'existing/a/b'))).toBe(true);
    expect(existsSync(join(root, 'dev/termination-log'))).toBe(true);
    await points.removeAll();
    expect(existsSync(join(root, 'existing'))).toBe(true);
    expect(existsSync(join(root, 'existing/a'))).toBe(false);
    expect(existsSync(join(root, 'dev'))).toBe(false);
    expect(existsSync(registry)).toBe(false);
  });

  it('keeps a path while another kubelet still uses it; the last one removes it', async () => {
    const { root, registry } = await setup();
    const first = new HostMountPoints(registry);
    const second = new HostMountPoints(registry);
    const path = join(root, 'var/run/secrets');
    await first.ensureDir(path);
    await second.ensureDir(path);
    await first.removeAll();
    expect(existsSync(path)).toBe(true);
    await second.removeAll();
    expect(existsSync(join(root, 'var'))).toBe(false);
  });

  it('leaves paths that something else filled, and what existed before', async () => {
    const { root, registry } = await setup();
    const points = new HostMountPoints(registry);
    await points.ensureDir(join(root, 'made/deeper'));
    await writeFile(join(root, 'made/somebody-elses-file'), 'x');
    await mkdir(join(root, 'pre'));
    await points.ensureDir(join(root, 'pre'));
    await points.removeAll();
    expect(existsSync(join(root, 'made/deeper'))).toBe(false);
    expect(existsSync(join(root, 'made/somebody-elses-file'))).toBe(true);
    expect(existsSync(join(root, 'pre'))).toBe(true);
  });

  it('re-creates a path removed behind its back', async () => {
    const { root, registry } = await setup();
    const points = new HostMountPoints(registry);
    const path = join(root, 'gone');
    await points.ensureDir(path);
    await rm(path, { recursive: true });
    await points.ensureDir(path);
    expect(existsSync(path)).toBe(true);
    await points.removeAll();
    expect(await readdir(root)).toEqual([]);
  });
});
