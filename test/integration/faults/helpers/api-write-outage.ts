import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

/** The methods that change something: what an API write outage refuses. Reads and watches pass. */
const WRITES = new Set(['PUT', 'POST', 'PATCH', 'DELETE']);

/**
 * A test-only HTTP proxy on 127.0.0.1 in front of the suite's API server: plain http in, https out (the
 * cluster's CA, the caller's own bearer token passed through), streaming answers (watches) piped as they
 * come. failWrites() starts an outage of API writes for whoever uses kubeconfigPath: every write is
 * answered 503 (a v1.Status, as an overloaded API server or a broken load balancer would) until
 * restoreWrites(). A second runner that talks to the API server directly sees no outage.
 */
export interface WriteOutageProxy {
  /** A kubeconfig (the admin one, its server replaced by this proxy) for the runner under test. */
  kubeconfigPath: string;
  failWrites(): void;
  restoreWrites(): void;
  /** Writes answered 503 so far, by method and path (no query). */
  refused: Array<{ method: string; path: string; atMs: number }>;
  close(): Promise<void>;
}

export async function startWriteOutageProxy(opts: {
  kubeconfigPath: string;
  /** Where to write the proxy's kubeconfig. */
  dir: string;
}): Promise<WriteOutageProxy> {
  const admin = new KubeConfig();
  admin.loadFromFile(opts.kubeconfigPath);
  const cluster = admin.getCurrentCluster();
  const user = admin.getCurrentUser();
  if (!cluster || !user?.token) throw new Error(`${opts.kubeconfigPath}: no current cluster or bearer token`);
  const upstream = new URL(cluster.server);
  const ca = cluster.caData ? Buffer.from(cluster.caData, 'base64') : undefined;
  let failing = false;
  const refused: WriteOutageProxy['refused'] = [];
  const sockets = new Set<Socket>();

  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const out = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
        ca,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.once('error', () => res.destroy());
    res.once('close', () => out.destroy());
    req.pipe(out);
  };
  const server = createServer((req, res) => {
    if (failing && WRITES.has(req.method ?? '')) {
      refused.push({ method: req.method ?? '', path: (req.url ?? '').split('?')[0] ?? '', atMs: Date.now() });
      req.resume();
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: 'API writes are failing (test write-outage proxy)',
        reason: 'ServiceUnavailable',
        code: 503,
      };
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify(status));
      return;
    }
    forward(req, res);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  const proxied = new KubeConfig();
  proxied.loadFromOptions({
    clusters: [{ name: 'via-proxy', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: user.name, token: user.token }],
    contexts: [{ name: 'via-proxy', cluster: 'via-proxy', user: user.name, namespace: 'default' }],
    currentContext: 'via-proxy',
  });
  const kubeconfigPath = join(opts.dir, `kubeconfig-write-outage-${port}`);
  await writeFile(kubeconfigPath, proxied.exportConfig(), { mode: 0o600 });

  return {
    kubeconfigPath,
    failWrites: () => {
      failing = true;
    },
    restoreWrites: () => {
      failing = false;
    },
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
