import { Worker } from 'node:worker_threads';

/**
 * The proxy's code, run in a worker thread of its own. In the kubelet's thread it stalled whenever that
 * thread was busy (a thousand pods starting: forking ip and sh for their sandboxes), the accept queue
 * overflowed, and runner pods' connections to the API server timed out (connect ETIMEDOUT) until their
 * leases lapsed. Plain JavaScript, evaluated as is: no loader is needed in the worker, under tsx, vitest or
 * the bundle alike.
 */
const PROXY_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createConnection, createServer } = require('node:net');
const sockets = new Set();
const server = createServer((client) => {
  const upstream = createConnection({ host: workerData.targetHost, port: workerData.targetPort });
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
server.once('error', (error) => parentPort.postMessage({ error: String(error && error.message) }));
server.listen({ port: workerData.listenPort, host: workerData.listenHost, backlog: 4096 }, () =>
  parentPort.postMessage({ listening: true }),
);
parentPort.on('message', (message) => {
  if (message !== 'close') return;
  for (const s of sockets) s.destroy();
  server.close(() => parentPort.postMessage({ closed: true }));
});
`;

/**
 * Forwards TCP from the host's pod-network address to the API server on loopback, so pods reach the API
 * server at a real address of ours (no Service ClusterIP is routed here) while the server itself stays
 * bound to 127.0.0.1. The forwarding runs in a worker thread (PROXY_SOURCE: why).
 */
export async function startTcpProxy(opts: {
  listenHost: string;
  listenPort: number;
  targetHost: string;
  targetPort: number;
}): Promise<{ close(): Promise<void> }> {
  const worker = new Worker(PROXY_SOURCE, { eval: true, workerData: opts });
  const next = () =>
    new Promise<{ listening?: true; closed?: true; error?: string }>((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`the API proxy's worker exited (${code})`));
      worker.once('exit', onExit);
      worker.once('error', reject);
      worker.once('message', (message) => {
        worker.off('exit', onExit);
        worker.off('error', reject);
        resolve(message);
      });
    });
  const started = await next().catch(async (error: unknown) => {
    await worker.terminate();
    throw error;
  });
  if (started.error !== undefined) {
    await worker.terminate();
    throw new Error(`the API proxy cannot listen on ${opts.listenHost}:${opts.listenPort}: ${started.error}`);
  }
  return {
    async close() {
      const closed = next().catch(() => undefined);
      worker.postMessage('close');
      await closed;
      await worker.terminate();
    },
  };
}
