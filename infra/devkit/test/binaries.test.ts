import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pinnedVersions, resolveBinaries } from '../src/local/binaries.ts';

const buildDir = resolve(import.meta.dirname, '../../build');
let dir: string;

async function stub(path: string) {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, '#!/bin/sh\nexit 0\n');
  await chmod(path, 0o755);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'khrun-binaries-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('resolveBinaries', () => {
  it('reads the pinned versions from the committed wrapper modules', async () => {
    expect(await pinnedVersions(buildDir)).toEqual({ kubernetes: 'v1.36.3', etcd: 'v3.6.16' });
  });

  it('takes etcd and kube-apiserver from KUBEBUILDER_ASSETS and the other two from the cache', async () => {
    const assets = join(dir, 'assets');
    const cache = join(dir, 'cache');
    await stub(join(assets, 'etcd'));
    await stub(join(assets, 'kube-apiserver'));
    await stub(join(cache, 'bin/kubernetes-v1.36.3/kube-controller-manager'));
    await stub(join(cache, 'bin/kubernetes-v1.36.3/kube-scheduler'));
    const found = await resolveBinaries({ kubebuilderAssets: assets, cacheDir: cache, buildDir });
    expect(found).toMatchObject({
      etcd: join(assets, 'etcd'),
      kubeApiserver: join(assets, 'kube-apiserver'),
      kubeControllerManager: join(cache, 'bin/kubernetes-v1.36.3/kube-controller-manager'),
      kubeScheduler: join(cache, 'bin/kubernetes-v1.36.3/kube-scheduler'),
    });
    expect(found.notices.join('\n')).toMatch(/from KUBEBUILDER_ASSETS/);
  });

  it('says what is wrong when KUBEBUILDER_ASSETS lacks a binary', async () => {
    const empty = join(dir, 'empty');
    await mkdir(empty, { recursive: true });
    await expect(
      resolveBinaries({ kubebuilderAssets: empty, cacheDir: join(dir, 'c2'), buildDir }),
    ).rejects.toThrow(/KUBEBUILDER_ASSETS is set, but .*etcd is not an executable file/);
  });

  it('uses cached binaries without building', async () => {
    const cache = join(dir, 'cache');
    await stub(join(cache, 'bin/etcd-v3.6.16/etcd'));
    await stub(join(cache, 'bin/kubernetes-v1.36.3/kube-apiserver'));
    const found = await resolveBinaries({ cacheDir: cache, buildDir, onProgress: () => {} });
    expect(found.etcd).toBe(join(cache, 'bin/etcd-v3.6.16/etcd'));
    expect(found.kubeApiserver).toBe(join(cache, 'bin/kubernetes-v1.36.3/kube-apiserver'));
    expect(found.notices).toEqual([]);
  });
});
