/**
 * Text from the cluster (error texts a checker pod reported, khstate fields, pod and Event strings) shown
 * on a person's terminal. Anyone who can run a checker pod chooses those texts, and a terminal acts on
 * control characters: ESC sequences clear the screen, set the window title or hide text; a C1 CSI (0x9B)
 * does the same on some terminals; a carriage return or backspace overwrites what was printed before; a
 * bidirectional override reorders the rest of the line. Each is shown as a visible escape instead, so what
 * the person reads is what was stored. JSON and YAML outputs do not use this: they carry data verbatim
 * (both formats escape control characters themselves).
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what this matches
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function visible(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const code = ch.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * The text with every C0 and C1 control character, DEL and bidirectional control shown as an escape
 * (`\x1b`, `\r`, `\x9b`, `\u202e`). Newlines stay only where the caller lays out several lines on purpose
 * (keepNewlines); elsewhere a newline could forge a line of output, so it is shown as `\n` too.
 */
export function escapeControls(text: string, opts: { keepNewlines?: boolean } = {}): string {
  return text.replace(CONTROL, (ch) => (ch === '\n' && opts.keepNewlines ? ch : visible(ch)));
}
