/**
 * Bounded text for annotations, Events and metric labels: cuts never split a character (a surrogate pair
 * or a UTF-8 sequence), and the marker says that something was cut.
 */
export const CUT_MARKER = '…';

/** At most maxChars code points, the marker included. */
export function truncateChars(text: string, maxChars: number, marker = CUT_MARKER): string {
  const chars = Array.from(text);
  if (chars.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  const keep = Math.max(0, maxChars - Array.from(marker).length);
  return chars.slice(0, keep).join('') + marker;
}

/** At most maxBytes of UTF-8, the marker included. */
export function truncateUtf8(text: string, maxBytes: number, marker = CUT_MARKER): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const budget = maxBytes - Buffer.byteLength(marker, 'utf8');
  if (budget < 0) return '';
  let out = '';
  let used = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (used + size > budget) break;
    out += ch;
    used += size;
  }
  return out + marker;
}

/** One line for a table cell: runs of whitespace (newlines included) become one space. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
