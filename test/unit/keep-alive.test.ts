import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls, { type TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { limiter } from '../../lib/core/limit.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { kubeListWatchTransport } from '../../lib/kube/list-watch-transport.ts';

// A TLS server on 127.0.0.1 (a throwaway self-signed certificate) that counts the TLS connections made to
// it: khrun's API clients reuse one keep-alive pool per client object instead of a handshake per request.

const run = promisify(execFile);
let dir: string;
let server: Server;
let connections = 0;
let resumed = 0;
let requests = 0;
let ca: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'khrun-keepalive-'));
  const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-days',
    '1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  ca = await readFile(cert, 'utf8');
  server = createServer({ key: await readFile(key), cert: ca }, (req, res) => {
    requests++;
    expect(req.headers.authorization).toBe('Bearer secret-token');
    res.writeHead(200, { 'content-type': 'application/json', date: new Date().toUTCString() });
    const url = new URL(req.url ?? '/', 'https://x');
    // A watch: one event, held open until the client ends it. A list: no items.
    if (url.searchParams.get('watch') === 'true')
      res.write(
        `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p', resourceVersion: '2' } } })}\n`,
      );
    else if (url.pathname.endsWith('/pods'))
      res.end(JSON.stringify({ metadata: { resourceVersion: '1' }, items: [] }));
    else res.end(JSON.stringify({ major: '1', minor: '33', gitVersion: 'v1.33.0' }));
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    connections++;
    if (socket.isSessionReused()) resumed++;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
}, 30_000);

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
        caData: Buffer.from(ca).toString('base64'),
      },
    ],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

describe('API clients keep their connections', () => {
  it('40 requests, 8 at a time, from two typed clients of one client object: at most 8 TLS connections, with its CA and token', async () => {
    const client = kubeClient(kubeConfig());
    connections = 0;
    requests = 0;
    const limit = limiter(8);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        limit<unknown>(() => (i % 2 ? client.version.getCode() : client.core.getAPIResources())),
      ),
    );
    expect(requests).toBe(40);
    expect(connections).toBeLessThanOrEqual(8);
    expect(connections).toBeGreaterThan(0);
  });

  it('another client object has its own connections, even on the same KubeConfig', async () => {
    const kc = kubeConfig();
    connections = 0;
    await kubeClient(kc).version.getCode();
    await kubeClient(kc).version.getCode();
    expect(connections).toBe(2);
  });

  it("lists and watches go through the client object's agent: lists share its connections, each watch resumes its TLS session, and no connection builds a TLS context of its own", async () => {
    const client = kubeClient(kubeConfig());
    const transport = kubeListWatchTransport(client);
    await client.version.getCode();
    connections = 0;
    resumed = 0;
    const contexts = vi.spyOn(tls, 'createSecureContext');
    try {
      for (let i = 0; i < 5; i++)
        await transport.list('/api/v1/namespaces/x/pods', {}, new AbortController().signal);
      expect(connections, 'lists reuse the kept connection').toBe(0);
      // Each watch ended by the client (as a run's pod watch is): its connection goes, the next makes one.
      for (let i = 0; i < 5; i++) {
        let seen!: () => void;
        const event = new Promise<void>((r) => {
          seen = r;
        });
        const handle = await transport.watch(
          '/api/v1/namespaces/x/pods',
          { allowWatchBookmarks: true },
          () => seen(),
          () => {},
        );
        await event;
        handle.abort();
      }
      // The first may take the connection the lists left idle.
      expect(connections).toBeGreaterThanOrEqual(4);
      expect(resumed, 'every new connection resumed the agent’s TLS session').toBe(connections);
      expect(contexts, 'a TLS context per connection').not.toHaveBeenCalled();
    } finally {
      contexts.mockRestore();
    }
  });
});
