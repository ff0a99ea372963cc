/**
 * The end of a checker pod's log as khrun shows it beside a check (describe, the status page, the status
 * API): at most maxLines lines and maxBytes UTF-8 bytes, whichever is less, always ending where the log
 * ends. A line longer than the byte budget keeps its end, cut on a character boundary. The text is the
 * checker's: each front end escapes it for where it goes (terminal, HTML, JSON).
 */
export interface TailBounds {
  maxLines: number;
  maxBytes: number;
}

export const DEFAULT_TAIL_BOUNDS: TailBounds = { maxLines: 20, maxBytes: 4096 };

export interface LogTail {
  lines: string[];
  /** True when the log had more than the lines kept (earlier lines, or the start of the first kept line). */
  truncated: boolean;
}

/** The last maxBytes bytes of text, starting on a character boundary (UTF-8 continuation bytes skipped). */
function lastBytes(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let start = bytes.length - maxBytes;
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}

/**
 * The tail of a log within bounds. A final newline ends the last line rather than starting an empty one;
 * `\r\n` counts as one line end. `truncatedBefore`: the text given is already the end of a longer log
 * (the API server's tailLines or limitBytes cut it). Pure.
 */
export function logTail(
  text: string,
  bounds: TailBounds = DEFAULT_TAIL_BOUNDS,
  truncatedBefore = false,
): LogTail {
  if (text === '') return { lines: [], truncated: truncatedBefore };
  const all = text.replace(/\r?\n$/, '').split(/\r?\n/);
  const lines: string[] = [];
  let budget = bounds.maxBytes;
  let truncated = truncatedBefore || all.length > bounds.maxLines;
  for (let i = all.length - 1; i >= 0 && lines.length < bounds.maxLines; i--) {
    const line = all[i] ?? '';
    // Each kept line costs its bytes and a newline, as it was in the log.
    const cost = Buffer.byteLength(line, 'utf8') + 1;
    if (cost <= budget) {
      lines.unshift(line);
      budget -= cost;
      continue;
    }
    if (lines.length === 0) lines.unshift(lastBytes(line, Math.max(0, budget - 1)));
    truncated = true;
    break;
  }
  return { lines, truncated };
}
