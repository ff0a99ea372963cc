import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeletApi } from '../src/local/kubelet/api.ts';
import {
  downwardFiles,
  prepareVolumes,
  projectKeys,
  VolumeSetupError,
} from '../src/local/kubelet/volumes.ts';

const data = { a: Buffer.from('alpha'), b: Buffer.from('beta') };

describe('projectKeys', () => {
  it('projects every key, sorted, with the default mode', () => {
    expect(projectKeys({ kind: 'configmap', name: 'c' }, data, undefined, undefined)).toEqual([
      { path: 'a', data: data.a, mode: 0o644 },
      { path: 'b', data: data.b, mode: 0o644 },
    ]);
  });

  it('projects only items, at their paths and modes', () => {
    expect(
      projectKeys({ kind: 'secret', name: 's' }, data, [{ key: 'b', path: 'dir/bee', mode: 0o400 }], 0o600),
    ).toEqual([{ path: 'dir/bee', data: data.b, mode: 0o400 }]);
  });

  it('fails on a missing object or item key unless optional', () => {
    expect(() => projectKeys({ kind: 'configmap', name: 'c' }, undefined, undefined, undefined)).toThrow(
      'configmap "c" not found',
    );
    expect(
      projectKeys({ kind: 'configmap', name: 'c', optional: true }, undefined, undefined, undefined),
    ).toEqual([]);
    expect(() =>
      projectKeys({ kind: 'secret', name: 's' }, data, [{ key: 'z', path: 'z' }], undefined),
    ).toThrow(VolumeSetupError);
    expect(
      projectKeys({ kind: 'secret', name: 's', optional: true }, data, [{ key: 'z', path: 'z' }], undefined),
    ).toEqual([]);
  });

  it('renders downward API fields', () => {
    const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns' } };
    const files = downwardFiles(
      [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }],
      { pod, podIp: '', hostIp: '' },
      undefined,
    );
    expect(files).toEqual([{ path: 'ns', data: Buffer.from('ns'), mode: 0o644 }]);
  });
});

describe('prepareVolumes', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const tokenRequests: unknown[] = [];
  const api: KubeletApi = {
    readConfigMap: async (_ns, name) =>
      name === 'kube-root-ca.crt' ? { 'ca.crt': Buffer.from('CA') } : undefined,
    readSecret: async () => ({ key: Buffer.from('secret') }),
    requestToken: async (opts) => {
      tokenRequests.push(opts);
      return 'the.jwt.token';
    },
    readPod: async () => undefined,
    replacePodStatus: async (pod) => pod,
    deletePodNow: async () => {},
  };

  it('writes the kube-api-access projected volume: token without newline, ca.crt and namespace', async () => {
    const podDir = await mkdtemp(join(tmpdir(), 'kubelet-volumes-'));
    dirs.push(podDir);
    const pod: V1Pod = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u' },
      spec: {
        serviceAccountName: 'runner',
        containers: [],
        volumes: [
          {
            name: 'kube-api-access-x',
            projected: {
              defaultMode: 0o644,
              sources: [
                { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
                { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
                {
                  downwardAPI: {
                    items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }],
                  },
                },
              ],
            },
          },
          { name: 'scratch', emptyDir: {} },
        ],
      },
    };
    const volumes = await prepareVolumes({ pod, api, podDir, podIp: '10.0.0.2', hostIp: '10.0.0.1' });
    const access = volumes.get('kube-api-access-x')!;
    expect(access.readOnly).toBe(true);
    expect(await readFile(join(access.hostPath, 'token'), 'utf8')).toBe('the.jwt.token');
    expect(await readFile(join(access.hostPath, 'ca.crt'), 'utf8')).toBe('CA');
    expect(await readFile(join(access.hostPath, 'namespace'), 'utf8')).toBe('ns');
    expect(tokenRequests).toEqual([
      {
        namespace: 'ns',
        serviceAccount: 'runner',
        audience: undefined,
        expirationSeconds: 3607,
        pod: { name: 'p', uid: 'u' },
      },
    ]);
    const scratch = volumes.get('scratch')!;
    expect(scratch.readOnly).toBe(false);
    expect((await stat(scratch.hostPath)).isDirectory()).toBe(true);
  });

  it('names the volume in a setup failure, and refuses unsupported types', async () => {
    const podDir = await mkdtemp(join(tmpdir(), 'kubelet-volumes-'));
    dirs.push(podDir);
    const pod = (volume: object): V1Pod => ({
      metadata: { name: 'p', namespace: 'ns' },
      spec: { containers: [], volumes: [{ name: 'v', ...volume }] },
    });
    await expect(
      prepareVolumes({ pod: pod({ configMap: { name: 'nope' } }), api, podDir, podIp: '', hostIp: '' }),
    ).rejects.toThrow('MountVolume.SetUp failed for volume "v" : configmap "nope" not found');
    await expect(
      prepareVolumes({
        pod: pod({ persistentVolumeClaim: { claimName: 'x' } }),
        api,
        podDir,
        podIp: '',
        hostIp: '',
      }),
    ).rejects.toThrow(/persistentVolumeClaim is not supported/);
  });
});
