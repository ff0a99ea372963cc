import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { startHealthCheckCache } from '../../lib/status/healthcheck-cache.ts';

function kubeConfigFor(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

/** Resolves once check() holds, re-checked on every cache change; rejects after timeoutMs. */
function until(subscribe: (l: () => void) => () => void, check: () => boolean, timeoutMs: number) {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`condition not met within ${timeoutMs} ms`));
    }, timeoutMs);
    const unsubscribe = subscribe(() => {
      if (!check()) return;
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
    if (check()) {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    }
  });
}

describe('startHealthCheckCache where v3 CRD is missing, then installed', () => {
  let server: Server;
  let url: string;
  let installed = false;
  let interrupted = 0;
  const hc = {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name: 'hc', namespace: 'a', resourceVersion: '5' },
  };
  beforeAll(async () => {
    server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (!installed) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"kind":"Status","code":404,"reason":"NotFound"}');
      } else if (u.searchParams.get('watch')) {
        res.writeHead(200, { 'content-type': 'application/json' }); // held open: no events
        res.flushHeaders();
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ metadata: { resourceVersion: '5' }, items: [hc] }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is ready and empty without the CRD, and lists the HealthChecks once it is installed', async () => {
    const cache = startHealthCheckCache({
      client: kubeClient(kubeConfigFor(url)),
      namespaces: ['a'],
      recheckMs: 50,
      onInterruption: () => {
        interrupted += 1;
      },
    });
    try {
      await cache.whenReady(5_000);
      expect(cache.snapshot()).toEqual([]);
      installed = true;
      await until(cache.subscribe, () => cache.snapshot().length === 1, 5_000);
      expect(cache.snapshot()[0]?.metadata?.name).toBe('hc');
      // A missing CRD is an expected state, not an interrupted watch to warn about.
      expect(interrupted).toBe(0);
    } finally {
      await cache.close();
    }
  });

  it('closes at once while it waits to look for the CRD again', async () => {
    installed = false;
    const cache = startHealthCheckCache({ client: kubeClient(kubeConfigFor(url)), recheckMs: 3_600_000 });
    await cache.whenReady(5_000);
    const started = performance.now();
    await cache.close();
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
