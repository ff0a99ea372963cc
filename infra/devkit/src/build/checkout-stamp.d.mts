// Types of checkout-stamp.mjs (plain JavaScript, read by functions/khrun.mjs before TypeScript can load).

/** [mtimeMs, size] of a file, or null when it does not exist. */
export type FileIdentity = readonly [number, number] | null;

export interface CheckoutStamp {
  version: number;
  /** The bundle's file name in CHECKOUT_DIR: cli-<id>.mjs. */
  bundle: string;
  /** Commands the bundle cannot run (their modules are kept out of it): they run through tsx. */
  devCommands: string[];
  /** Every file the bundle depends on, relative to the root, with its identity when esbuild read it. */
  inputs: Record<string, FileIdentity>;
}

export const STAMP_VERSION: number;
export const CHECKOUT_DIR: string;
export const STAMP_FILE: string;
export const INSTALLED_PACKAGES: string;
export function fileIdentity(path: string): FileIdentity;
export function readStamp(root: string): CheckoutStamp | undefined;
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean;
export function staleReason(root: string, stamp: CheckoutStamp): string | undefined;
