import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { startStateCache } from '../../lib/status/state-cache.ts';

/** A KubeConfig for an API server that answers every request with 503 (up, but not serving). */
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

describe('startStateCache without a working API server', () => {
  let server: Server;
  let url: string;
  const paths: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"kind":"Status","code":503}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is not ready, says why whenReady gives up, retries, and stops on close', async () => {
    const interruptions: string[] = [];
    const cache = startStateCache({
      client: kubeClient(kubeConfigFor(url)),
      namespaces: ['a', 'b', 'a'],
      onInterruption: (reason) => interruptions.push(reason),
    });
    expect(cache.ready()).toBe(false);
    expect(cache.snapshot()).toEqual([]);
    await expect(cache.whenReady(300)).rejects.toThrow(/not ready after 300 ms \(listed 0 of 2 scopes\)/);
    expect(interruptions.some((r) => r.includes('HTTP 503'))).toBe(true);
    expect(new Set(paths)).toEqual(
      new Set([
        '/apis/comcast.github.io/v1/namespaces/a/khstates',
        '/apis/comcast.github.io/v1/namespaces/b/khstates',
      ]),
    );
    const waiting = cache.whenReady(60_000);
    await cache.close();
    await expect(waiting).rejects.toThrow(/closed before it was ready/);
    await expect(cache.whenReady(10)).rejects.toThrow(/closed before it was ready/);
    const seen = paths.length;
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(paths.length).toBe(seen);
  });

  it('watches all namespaces with one cluster-wide list when no namespace is given', async () => {
    paths.length = 0;
    const cache = startStateCache({ client: kubeClient(kubeConfigFor(url)) });
    await expect(cache.whenReady(100)).rejects.toThrow(/listed 0 of 1 scopes/);
    await cache.close();
    expect(new Set(paths)).toEqual(new Set(['/apis/comcast.github.io/v1/khstates']));
  });
});
