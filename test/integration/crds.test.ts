import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiErrorMessage, classifyApiError } from '../../lib/kube/errors.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, KHSTATE_PLURAL } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';

// The khcheck and khstate CRDs are Kuberhealthy v2's structural schemas: what v2 rejected is rejected
// by the real API server, and fields v2 does not know are pruned.

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
let ns: string;
beforeAll(async () => {
  ns = await freshNamespace(kc, 'crd');
});
afterAll(async () => {
  await dropNamespace(kc, ns);
});

const khcheck = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: `${KH_GROUP}/${KH_VERSION}`,
  kind: 'KuberhealthyCheck',
  metadata: { name },
  spec,
});

async function rejection(plural: string, body: object): Promise<string> {
  try {
    await custom.createNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural,
      namespace: ns,
      body,
    });
  } catch (error) {
    expect(classifyApiError(error)).toBe('Invalid');
    return apiErrorMessage(error);
  }
  throw new Error('the API server accepted an invalid object');
}

describe('the khcheck and khstate CRDs on the real API server', () => {
  it.each([
    ['no podSpec', { runInterval: '5m', timeout: '1m' }, /spec.podSpec: Required value/],
    [
      'no containers',
      { runInterval: '5m', timeout: '1m', podSpec: {} },
      /spec.podSpec.containers: Required value/,
    ],
    [
      'no runInterval',
      { timeout: '1m', podSpec: { containers: [{ name: 'c', image: 'i' }] } },
      /spec.runInterval: Required value/,
    ],
    [
      'a number for timeout',
      { runInterval: '5m', timeout: 60, podSpec: { containers: [{ name: 'c', image: 'i' }] } },
      /spec.timeout: Invalid value/,
    ],
  ])('rejects a khcheck with %s', async (_what, spec, message) => {
    expect(await rejection(KHCHECK_PLURAL, khcheck('bad', spec))).toMatch(message);
  });

  it('accepts a v2 khcheck unchanged and prunes fields v2 does not know', async () => {
    const created = (await custom.createNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHCHECK_PLURAL,
      namespace: ns,
      body: khcheck('good', {
        runInterval: '5m',
        timeout: '15m',
        extraLabels: { team: 'platform' },
        podSpec: { containers: [{ name: 'c', image: 'kuberhealthy/dns-resolution-check:v1.5.0' }] },
        notAField: 'dropped',
      }),
    })) as { spec: Record<string, unknown> };
    expect(created.spec).toMatchObject({
      runInterval: '5m',
      timeout: '15m',
      extraLabels: { team: 'platform' },
    });
    expect(created.spec).not.toHaveProperty('notAField');
  });

  it('rejects a khstate without the fields v2 readers require', async () => {
    const message = await rejection(KHSTATE_PLURAL, {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: 'KuberhealthyState',
      metadata: { name: 'partial' },
      spec: { OK: true },
    });
    for (const field of ['AuthoritativePod', 'Errors', 'Namespace', 'Node', 'RunDuration', 'uuid']) {
      expect(message).toContain(`spec.${field}: Required value`);
    }
  });
});
