import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Log } from '../core/log.ts';
import { normalizeIp } from './identify-caller.ts';

/** Open connections beyond this are refused or make room (each costs a few KiB however little it sent). */
export const DEFAULT_MAX_CONNECTIONS = 4_096;
/** Open connections one source address may hold; a checker pod needs one. */
export const DEFAULT_MAX_CONNECTIONS_PER_SOURCE = 64;

/**
 * How long a new connection may take to send its first request's headers before a newer one may evict it.
 * A connection that has been answered and waits for another request (keep-alive) may be evicted at once.
 */
export const DEFAULT_EVICT_AFTER_MS = 1_000;

/** One open connection as the limits see it. */
interface Connection {
  socket: Socket;
  source: string;
  openedMs: number;
  /** A request whose headers arrived and whose response has not finished: never evicted. */
  busy: boolean;
  /** It has been answered at least once: waiting between requests, it has had its turn. */
  served: boolean;
}

export interface ConnectionLimits {
  maxConnections: number;
  maxPerSource: number;
  /** A new connection that has not sent its first request's headers this long may be evicted for a new one. */
  evictAfterMs: number;
}

type Open = { source: string; busy: boolean; served?: boolean; openedMs: number };

/**
 * Which connection a new one from `source` costs, decided from the open ones (pure): admitted as is while
 * there is room; else, at its source's cap, that source's oldest idle connection (one waiting between
 * requests, or one that has not sent its first headers within evictAfterMs) is evicted for it; at the global cap, the oldest idle connection of
 * the source holding the most; with nothing idle to evict, the new one is refused. So one source holding
 * half-open connections never locks another source out, and never holds more than its cap.
 */
export function admitConnection<C extends Open>(
  open: readonly C[],
  source: string,
  limits: ConnectionLimits,
  nowMs: number,
): { admit: true; evict: C | undefined } | { admit: false; reason: 'source' | 'total' } {
  const evictable = (c: C) => !c.busy && (c.served === true || nowMs - c.openedMs >= limits.evictAfterMs);
  const fromSource = open.filter((c) => c.source === source);
  if (fromSource.length >= limits.maxPerSource) {
    const idle = fromSource.find(evictable);
    return idle ? { admit: true, evict: idle } : { admit: false, reason: 'source' };
  }
  if (open.length < limits.maxConnections) return { admit: true, evict: undefined };
  const counts = new Map<string, number>();
  for (const c of open) counts.set(c.source, (counts.get(c.source) ?? 0) + 1);
  const largest = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  const idle = open.find((c) => c.source === largest && evictable(c)) ?? open.find(evictable);
  return idle ? { admit: true, evict: idle } : { admit: false, reason: 'total' };
}

/**
 * Applies the limits to a server's connections as they open (in arrival order, oldest first). Refused and
 * evicted connections are destroyed at once; a line is logged at the 1st, 10th, 100th, ... of them.
 */
export function limitConnections(server: Server, limits: ConnectionLimits, log: Log): void {
  const open: Connection[] = [];
  const bySocket = new WeakMap<Socket, Connection>();
  let refused = 0;
  let evicted = 0;
  // 1, 10, 100, ...: says the cap is hit without a line per connection.
  const often = (count: number) => Number.isInteger(Math.log10(count));
  server.on('connection', (socket: Socket) => {
    const source = normalizeIp(socket.remoteAddress) ?? '';
    const nowMs = performance.now();
    const decision = admitConnection(open, source, limits, nowMs);
    if (!decision.admit) {
      socket.destroy();
      if (often(++refused)) {
        log.warn('connection cap reached: new connections dropped', {
          ...limits,
          dropped: refused,
          source,
          cap: decision.reason === 'source' ? 'per source' : 'total',
        });
      }
      return;
    }
    if (decision.evict) {
      decision.evict.socket.destroy();
      if (often(++evicted)) {
        log.warn('connection cap reached: idle connections evicted', {
          ...limits,
          evicted,
          source: decision.evict.source,
        });
      }
    }
    const connection: Connection = { socket, source, openedMs: nowMs, busy: false, served: false };
    open.push(connection);
    bySocket.set(socket, connection);
    socket.once('close', () => {
      const i = open.indexOf(connection);
      if (i >= 0) open.splice(i, 1);
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const connection = bySocket.get(req.socket);
    if (!connection) return;
    connection.busy = true;
    res.once('close', () => {
      connection.busy = false;
      connection.served = true;
    });
  });
}
