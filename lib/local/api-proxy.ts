import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * Forwards TCP from the host's pod-network address to the API server on loopback, so pods reach the API
 * server at a real address of ours (no Service ClusterIP is routed here) while the server itself stays
 * bound to 127.0.0.1.
 */
export async function startTcpProxy(opts: {
  listenHost: string;
  listenPort: number;
  targetHost: string;
  targetPort: number;
}): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: opts.targetHost, port: opts.targetPort });
    sockets.add(client);
    sockets.add(upstream);
    const forget = () => {
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.pipe(upstream).pipe(client);
    client.once('close', () => {
      upstream.destroy();
      forget();
    });
    upstream.once('close', () => {
      client.destroy();
      forget();
    });
    client.once('error', () => upstream.destroy());
    upstream.once('error', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.listenPort, opts.listenHost, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
