import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiter } from '../../lib/core/limit.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';

// A TLS server on 127.0.0.1 (a throwaway self-signed certificate) that counts the TLS connections made to
// it: khrun's API clients reuse one keep-alive pool per client object instead of a handshake per request.

const run = promisify(execFile);
let dir: string;
let server: Server;
let connections = 0;
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
    res.end(JSON.stringify({ major: '1', minor: '33', gitVersion: 'v1.33.0' }));
  });
  server.on('secureConnection', () => {
    connections++;
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
});
