import { ensureDebianProgram } from './debian.ts';

/** Debian's chromium, which the status page tests render the page in. */
export const CHROMIUM = '/usr/bin/chromium';

/** The Chromium binary, installed from Debian when missing and root, else an error saying what to install. */
export function ensureChromium(): Promise<string> {
  return ensureDebianProgram(CHROMIUM, 'chromium');
}
