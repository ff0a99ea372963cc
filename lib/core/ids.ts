import { randomUUID } from 'node:crypto';

/** Where run UUIDs come from; injected so tests can name runs. */
export interface IdSource {
  runUuid(): string;
}

export const randomIds: IdSource = { runUuid: randomUUID };

/** Run UUIDs are report credentials: logs carry only a prefix, enough to correlate, useless to report. */
export function shortId(uuid: string): string {
  return uuid.slice(0, 8);
}
