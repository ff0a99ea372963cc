/** What a policy key's parser made of a value: the value, or what to write instead (policy.ts problems). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; want: string };

export const parsedOk = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const parsedBad = <T = never>(want: string): Parsed<T> => ({ ok: false, want });
