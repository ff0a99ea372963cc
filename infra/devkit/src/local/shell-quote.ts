/** Single-quotes a string for sh: the result is one word whatever the string holds. Pure. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
