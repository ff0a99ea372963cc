import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SchemaCheck } from '../../helpers/receiver-schemas.ts';

/** One request a local receiver got. */
export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: unknown;
  /** What the receiver's schema found wrong (answered 400 then). */
  problems: string[];
  atMs: number;
}

/**
 * A local HTTP receiver on 127.0.0.1 standing in for a provider: each POST is checked against the
 * provider's documented schema (answered 400 with the problems when it breaks it, as the provider would),
 * recorded, and answered `status`/`reply` otherwise. `down()` answers 503 to everything until `up()`.
 */
export async function startReceiver(opts: { schema?: SchemaCheck; status?: number; reply?: string } = {}) {
  const got: Received[] = [];
  const waiters = new Set<() => void>();
  let down = false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (down) {
        res.writeHead(503).end('down');
        return;
      }
      let json: unknown;
      let problems: string[];
      try {
        json = JSON.parse(body);
        problems = opts.schema ? opts.schema(json) : [];
      } catch {
        problems = ['the body is not JSON'];
      }
      got.push({ path: req.url ?? '', headers: req.headers, body, json, problems, atMs: Date.now() });
      for (const w of waiters) w();
      if (problems.length) res.writeHead(400, { 'content-type': 'text/plain' }).end(problems.join('; '));
      else res.writeHead(opts.status ?? 200, { 'content-type': 'application/json' }).end(opts.reply ?? 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    got,
    down: () => {
      down = true;
    },
    up: () => {
      down = false;
    },
    /** Resolves once test(got) holds; rejects after timeoutMs saying what was received. */
    until(
      test: (got: Received[]) => boolean,
      timeoutMs = 30_000,
      what = 'the expected requests',
    ): Promise<void> {
      if (test(got)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!test(got)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `timed out waiting for ${what}; got ${got.length}: ${got.map((g) => g.body.slice(0, 200)).join('\n')}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
