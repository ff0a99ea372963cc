import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type EnvObjects,
  expand,
  fieldRefValue,
  referencedEnvObjects,
  resolveContainerEnv,
  serviceEnv,
} from '../src/local/kubelet/env.ts';

const pod: V1Pod = {
  metadata: {
    name: 'p',
    namespace: 'ns',
    uid: 'uid-1',
    labels: { app: 'web', tier: 'front' },
    annotations: { note: 'hello' },
  },
  spec: { nodeName: 'khrun-node', serviceAccountName: 'sa', containers: [] },
};
const ctx = { pod, podIp: '10.213.1.7', hostIp: '10.213.0.1', apiServer: { host: '10.213.0.1', port: 6443 } };
const objects: EnvObjects = {
  configMaps: new Map([['cm', { color: 'blue', 'bad key': 'x' }]]),
  secrets: new Map([['s', { password: 's3cr3t' }]]),
};
const run = (container: Partial<V1Container>, objs = objects) =>
  resolveContainerEnv({ name: 'main', ...container }, ctx, objs);
const envOf = (container: Partial<V1Container>) => {
  const result = run(container);
  if (!result.ok) throw new Error(result.message);
  return Object.fromEntries(result.env);
};

describe('expand ($(VAR) as the kubelet does)', () => {
  const vars: Record<string, string> = { A: 'a', EMPTY: '' };
  it.each([
    ['$(A)', 'a'],
    ['x$(A)y', 'xay'],
    ['$(A)$(A)', 'aa'],
    ['$$(A)', '$(A)'],
    ['$(MISSING)', '$(MISSING)'],
    ['$(EMPTY)!', '!'],
    ['$(A', '$(A'],
    ['$A', '$A'],
    ['cost: 5$', 'cost: 5$'],
    ['$$$$', '$$'],
    ['', ''],
  ])('%s → %s', (input, output) => {
    expect(expand(input, (n) => vars[n])).toBe(output);
  });
});

describe('resolveContainerEnv', () => {
  it('expands values against earlier variables and the service variables only', () => {
    const env = envOf({
      env: [
        { name: 'LATER_REF', value: '$(FIRST)' },
        { name: 'FIRST', value: 'one' },
        { name: 'SECOND', value: '$(FIRST)-$(KUBERNETES_SERVICE_PORT)' },
      ],
    });
    expect(env.LATER_REF).toBe('$(FIRST)');
    expect(env.SECOND).toBe('one-6443');
  });

  it('gives the kubernetes Service variables, PATH, HOME and HOSTNAME, and lets the pod override them', () => {
    const env = envOf({ env: [{ name: 'HOME', value: '/work' }] });
    expect(env).toMatchObject({
      KUBERNETES_SERVICE_HOST: '10.213.0.1',
      KUBERNETES_SERVICE_PORT: '6443',
      KUBERNETES_SERVICE_PORT_HTTPS: '6443',
      KUBERNETES_PORT: 'tcp://10.213.0.1:6443',
      HOSTNAME: 'p',
      HOME: '/work',
    });
    expect(env.PATH).toContain('/usr/bin');
  });

  it.each([
    [undefined, '/opt/khrun/node_modules'],
    ['/usr/local/lib/node_modules', '/usr/local/lib/node_modules:/opt/khrun/node_modules'],
  ])('appends the image stand-in to NODE_PATH (pod value %s)', (own, expected) => {
    const container = { name: 'c', image: 'i', ...(own ? { env: [{ name: 'NODE_PATH', value: own }] } : {}) };
    const result = resolveContainerEnv(
      container,
      { ...ctx, imageNodePath: '/opt/khrun/node_modules' },
      objects,
    );
    expect(result.ok && Object.fromEntries(result.env).NODE_PATH).toBe(expected);
  });

  it('reads configMapKeyRef and secretKeyRef, skipping optional missing ones', () => {
    const env = envOf({
      env: [
        { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'cm', key: 'color' } } },
        { name: 'PW', valueFrom: { secretKeyRef: { name: 's', key: 'password' } } },
        { name: 'NOKEY', valueFrom: { secretKeyRef: { name: 's', key: 'nope', optional: true } } },
        { name: 'NOOBJ', valueFrom: { configMapKeyRef: { name: 'gone', key: 'k', optional: true } } },
      ],
    });
    expect(env).toMatchObject({ COLOR: 'blue', PW: 's3cr3t' });
    expect(env).not.toHaveProperty('NOKEY');
    expect(env).not.toHaveProperty('NOOBJ');
  });

  it.each([
    [{ secretKeyRef: { name: 's', key: 'nope' } }, "couldn't find key nope in Secret ns/s"],
    [{ configMapKeyRef: { name: 'cm', key: 'nope' } }, "couldn't find key nope in ConfigMap ns/cm"],
    [{ secretKeyRef: { name: 'gone', key: 'k' } }, 'secret "gone" not found'],
    [{ configMapKeyRef: { name: 'gone', key: 'k' } }, 'configmap "gone" not found'],
  ])('fails with the kubelet message for a missing required reference %#', (valueFrom, message) => {
    const objs: EnvObjects = { ...objects, secrets: new Map([...objects.secrets, ['gone', undefined]]) };
    expect(run({ env: [{ name: 'X', valueFrom }] }, objs)).toEqual({ ok: false, message });
  });

  it('takes envFrom with a prefix, skips invalid names, and lets env override it', () => {
    const env = envOf({
      envFrom: [{ configMapRef: { name: 'cm' }, prefix: 'CM_' }, { secretRef: { name: 's' } }],
      env: [{ name: 'password', value: 'overridden' }],
    });
    expect(env.CM_color).toBe('blue');
    expect(env).not.toHaveProperty('CM_bad key');
    expect(env.password).toBe('overridden');
  });

  it('fails on a missing required envFrom source but not an optional one', () => {
    expect(run({ envFrom: [{ secretRef: { name: 'nope' } }] })).toEqual({
      ok: false,
      message: 'secret "nope" not found',
    });
    expect(run({ envFrom: [{ secretRef: { name: 'nope', optional: true } }] }).ok).toBe(true);
  });

  it('lists the objects a container refers to', () => {
    expect(
      referencedEnvObjects({
        name: 'c',
        envFrom: [{ configMapRef: { name: 'a' } }],
        env: [
          { name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
          { name: 'Y', valueFrom: { configMapKeyRef: { name: 'a', key: 'k' } } },
        ],
      }),
    ).toEqual({ configMaps: ['a'], secrets: ['s'] });
  });
});

describe('fieldRefValue', () => {
  it.each([
    ['metadata.name', 'p'],
    ['metadata.namespace', 'ns'],
    ['metadata.uid', 'uid-1'],
    ["metadata.labels['app']", 'web'],
    ["metadata.annotations['note']", 'hello'],
    ["metadata.labels['absent']", ''],
    ['metadata.labels', 'app="web"\ntier="front"'],
    ['spec.nodeName', 'khrun-node'],
    ['spec.serviceAccountName', 'sa'],
    ['status.podIP', '10.213.1.7'],
    ['status.hostIP', '10.213.0.1'],
  ])('%s → %s', (fieldPath, value) => {
    expect(fieldRefValue({ fieldPath }, ctx)).toEqual({ ok: true, value });
  });

  it('rejects unsupported paths', () => {
    expect(fieldRefValue({ fieldPath: 'spec.restartPolicy' }, ctx).ok).toBe(false);
  });
});

describe('serviceEnv', () => {
  it('names the port variables after the port', () => {
    expect(serviceEnv({ host: 'h', port: 1234 })).toMatchObject({
      KUBERNETES_PORT_1234_TCP: 'tcp://h:1234',
      KUBERNETES_PORT_1234_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_1234_TCP_PORT: '1234',
      KUBERNETES_PORT_1234_TCP_ADDR: 'h',
    });
  });
});
