import { ensureDebianProgram } from './debian.ts';

/** Debian's shellcheck, which actionlint runs on every `run:` script of a workflow. */
export const SHELLCHECK = '/usr/bin/shellcheck';

/**
 * The shellcheck binary, installed from Debian when missing and root, else an error saying what to install.
 * Never a skip: actionlint without shellcheck turns that rule off and passes scripts it never read.
 */
export function ensureShellcheck(): Promise<string> {
  return ensureDebianProgram(SHELLCHECK, 'shellcheck');
}
