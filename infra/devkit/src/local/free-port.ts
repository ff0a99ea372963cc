import { createServer } from 'node:net';

/** Asks the kernel for a free TCP port on host; the port is released before it is returned. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
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
