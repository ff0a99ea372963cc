import { truncateChars } from '../core/text.ts';
import type { OutcomeKind } from './outcome-kind.ts';
import type { KhState } from './resources.ts';

/**
 * The last outcomes of a check, oldest first, kept in the khstate's annotations so a stateless runner can
 * show a history. Bounded by count and by the annotation's UTF-8 size: annotations of an object share a
 * 256 KiB budget, and every watcher of khstates receives the whole object on each change.
 */
export const HISTORY_ANNOTATION = 'khrun.dev/history';

export interface HistoryEntry {
  /** When the outcome was recorded (epoch ms). */
  atMs: number;
  kind: OutcomeKind;
  ok: boolean;
  durationMs: number;
  /** The first error, truncated; absent for a success. */
  error?: string;
}

export interface HistoryBounds {
  maxEntries: number;
  maxBytes: number;
  /** Longest first error kept per entry, in code points (an ellipsis marks the cut). */
  maxErrorChars: number;
}

export const DEFAULT_HISTORY_BOUNDS: HistoryBounds = { maxEntries: 20, maxBytes: 4096, maxErrorChars: 200 };

function isEntry(v: unknown): v is HistoryEntry {
  if (!v || typeof v !== 'object') return false;
  const e = v as Record<string, unknown>;
  return (
    typeof e.atMs === 'number' &&
    Number.isFinite(e.atMs) &&
    typeof e.kind === 'string' &&
    typeof e.ok === 'boolean' &&
    typeof e.durationMs === 'number' &&
    Number.isFinite(e.durationMs) &&
    (e.error === undefined || typeof e.error === 'string')
  );
}

/** Parses the annotation; malformed text or entries are dropped rather than trusted. */
export function parseHistory(text: string | undefined): HistoryEntry[] {
  if (!text) return [];
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? value.filter(isEntry) : [];
  } catch {
    return [];
  }
}

export function readHistory(state: KhState | null | undefined): HistoryEntry[] {
  return parseHistory(state?.metadata.annotations?.[HISTORY_ANNOTATION]);
}

const bytesOf = (entries: HistoryEntry[]) => Buffer.byteLength(JSON.stringify(entries), 'utf8');

/** The annotation text with entry appended, bounded as appendHistoryEntry bounds it. */
export function appendHistory(
  existing: string | undefined,
  entry: HistoryEntry,
  bounds: HistoryBounds = DEFAULT_HISTORY_BOUNDS,
): string {
  return JSON.stringify(appendHistoryEntry(parseHistory(existing), entry, bounds));
}

/**
 * The entries with entry appended: the newest maxEntries that fit in maxBytes. The newest entry is always
 * kept; if it alone is too big its error is shortened, then dropped.
 */
export function appendHistoryEntry(
  existing: readonly HistoryEntry[],
  entry: HistoryEntry,
  bounds: HistoryBounds = DEFAULT_HISTORY_BOUNDS,
): HistoryEntry[] {
  const newest: HistoryEntry = {
    atMs: entry.atMs,
    kind: entry.kind,
    ok: entry.ok,
    durationMs: Math.max(0, Math.round(entry.durationMs)),
    ...(entry.error ? { error: truncateChars(entry.error, bounds.maxErrorChars) } : {}),
  };
  const keep = Math.max(1, bounds.maxEntries);
  let entries = [...existing, newest].slice(-keep);
  while (entries.length > 1 && bytesOf(entries) > bounds.maxBytes) entries = entries.slice(1);
  // Only the newest entry is left when the loop above could not fit more.
  const only = entries[0] as HistoryEntry;
  while (only.error !== undefined && bytesOf(entries) > bounds.maxBytes) {
    const chars = Array.from(only.error).length;
    if (chars <= 1) delete only.error;
    else only.error = truncateChars(only.error, Math.floor(chars / 2));
  }
  return entries;
}
