import { createServer } from 'node:net';

/**
 * Ports are picked below Linux's default ephemeral range (32768-60999). A port the kernel hands out for
 * `listen(0)` comes from that range, which every outgoing connection on the machine also draws from:
 * between freePort's answer and the program's own bind, a connection of another test lane took etcd's
 * client port once (etcd: "bind: address already in use", a lane lost). Below the range only another
 * explicit bind can take it.
 */
const LOW = 20_000;
const HIGH = 32_767;

/** Whether nothing listens on host:port now (a bind that succeeds, released at once). */
function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** A free TCP port on host (released before it is returned), below the ephemeral range when one is free. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 64; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (await canBind(host, port)) return port;
  }
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not allocate a port');
  return address.port;
}
