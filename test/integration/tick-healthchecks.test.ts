import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import {
  HC_API_VERSION,
  HC_GROUP,
  HC_PLURAL,
  HC_VERSION,
  type HealthCheck,
} from '../../lib/healthcheck/resources.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import type { CheckRef } from '../../lib/schedule/run-job.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';
import { runTick } from '../../lib/tick/tick.ts';
import { tickKube } from '../../lib/tick/tick-kube.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { applyDeploy, DEPLOY_NAMESPACE, serviceAccountKubeConfig } from './helpers/deploy.ts';

// The tick lists Kuberhealthy v3 HealthCheck resources beside khchecks and dispatches a due one once: two
// ticks at once, as the tick's ServiceAccount (its RBAC in force), on the real API server.

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
let ns: string;
let tickKc: KubeConfig;

beforeAll(async () => {
  await applyDeploy({ name: 'tick-healthchecks' });
  ns = await freshNamespace(kc, 'tick-hc');
  tickKc = await serviceAccountKubeConfig(kc, DEPLOY_NAMESPACE, 'khrun-tick');
}, 180_000);
afterAll(async () => {
  await dropNamespace(kc, ns);
});

describe('khrun tick and Kuberhealthy v3 HealthChecks', () => {
  it('dispatches a never-run HealthCheck once of two ticks, and records the claim on the HealthCheck', async () => {
    const body: HealthCheck = {
      apiVersion: HC_API_VERSION,
      kind: 'HealthCheck',
      metadata: { name: 'v3-due', namespace: ns },
      spec: {
        runInterval: '10m',
        timeout: '30s',
        podSpec: { spec: { containers: [{ name: 'check', image: 'example/v3-check:1' }] } },
      },
    };
    await custom.createNamespacedCustomObject({ ...co, namespace: ns, body });
    const sent: { check: CheckRef; ref: string }[] = [];
    const dispatcher: Dispatcher = {
      runsHealthChecks: true,
      refFor: (check, nowMs) => `khrun-hc-${check.name}-${nowMs}`,
      dispatch: async (check, ref) => {
        sent.push({ check, ref });
      },
    };
    const tickClient = kubeClient(tickKc);
    const tick = (identity: string) =>
      runTick(
        { kube: tickKube(tickClient), dispatcher, clock: tickClient.clock, log: silentLog },
        { scope: { namespaces: [ns] }, identity },
      );
    const [a, b] = await Promise.all([tick('tick-a'), tick('tick-b')]);
    const label = `healthcheck/${ns}/v3-due`;
    const entries = [...a, ...b].filter((e) => e.check === label);
    // One dispatches; the other either loses the write race ('lost') or, listing after the claim landed,
    // finds the HealthCheck claimed ('not-due'): either way it sends nothing.
    const results = entries.map((e) => e.result).sort();
    expect([
      ['dispatched', 'lost'],
      ['dispatched', 'not-due'],
    ]).toContainEqual(results);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.check).toMatchObject({
      namespace: ns,
      name: 'v3-due',
      kind: 'healthcheck',
      timeoutMs: 30_000,
    });

    const hc = (await custom.getNamespacedCustomObject({
      ...co,
      namespace: ns,
      name: 'v3-due',
    })) as HealthCheck;
    expect(JSON.parse(hc.metadata.annotations?.[ANNOTATION.dispatch] ?? '{}')).toMatchObject({
      ref: sent[0]?.ref,
    });
    expect(hc.status?.currentUUID ?? '').toBe('');

    // Pending: the next tick waits for the dispatched runner instead of sending another.
    const later = (await tick('tick-c')).filter((e) => e.check === label);
    expect(later).toMatchObject([{ result: 'not-due', decision: { reason: 'dispatched' } }]);
    expect(sent).toHaveLength(1);
  });
});
