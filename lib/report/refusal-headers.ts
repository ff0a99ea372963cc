import type { IncomingMessage } from 'node:http';

/**
 * The headers of an answer given before a request's body is read. A body declared at most `freeBytes`
 * long is left for Node to read and discard, and the connection stays open: closing a socket with unread
 * bytes in it resets the connection, and the sender may then never read why it was refused. A longer or
 * undeclared (chunked) body closes the connection instead of being read.
 */
export function refusalHeaders(req: IncomingMessage, freeBytes: number): Record<string, string> {
  const declared = Number(req.headers['content-length']);
  const small =
    req.headers['transfer-encoding'] === undefined && Number.isInteger(declared) && declared <= freeBytes;
  return small ? {} : { connection: 'close' };
}
