import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The secret in the reporting URL. A checker pod's KH_REPORTING_URL is `<base>/<namespace>/<check>/<run
 * UUID>/<deadline ms>/<mac>`, the mac an HMAC-SHA256 of those under a key only the runner and the report
 * endpoint hold. The URL names the run, so the endpoint identifies the caller without a single API request
 * (no pod LIST); anything without a valid mac, or past its run's deadline (a replay of a finished run), is
 * refused before its body is read and before any API request. v2 clients POST to
 * KH_REPORTING_URL as they find it, so the Go checkclient, the npm and Python clients need no change.
 */

/** The run a reporting URL names. */
export interface RunRef {
  namespace: string;
  checkName: string;
  uuid: string;
  /** The run's report deadline (epoch ms), as its khstate holds it. */
  deadlineMs: number;
}

/** An HMAC key; the bytes never leave the process except as configured (a Secret). */
export interface ReportKey {
  readonly bytes: Buffer;
}

/** A configured key shorter than this is refused: it would be guessable. */
export const MIN_REPORT_KEY_CHARS = 32;

/** A fresh random key: `khrun run`'s own endpoint, which only its own pods report to. */
export function randomReportKey(): ReportKey {
  return { bytes: randomBytes(32) };
}

/** A key from configuration text (already checked for length and shape by lib/config). */
export function reportKeyOf(text: string): ReportKey {
  return { bytes: Buffer.from(text, 'utf8') };
}

/** DNS-1123 names (namespace, khcheck) and run UUIDs: what a path segment of a tokened URL may hold. */
const NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
const UUID = /^[0-9A-Za-z-]{1,63}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;
const EPOCH_MS = /^[0-9]{1,15}$/;

function macOf(key: ReportKey, run: RunRef): Buffer {
  // Length-free framing is safe: no segment can hold the separator.
  return createHmac('sha256', key.bytes)
    .update(`khrun-report/v1\n${run.namespace}\n${run.checkName}\n${run.uuid}\n${run.deadlineMs}`)
    .digest();
}

/** The reporting URL of one run: base (the report path as pods reach it) plus the run and its mac. */
export function signedReportUrl(base: string, key: ReportKey, run: RunRef): string {
  const mac = macOf(key, run).toString('base64url');
  const trimmed = base.endsWith('/') ? base.slice(0, -1) : base;
  return `${trimmed}/${run.namespace}/${run.checkName}/${run.uuid}/${run.deadlineMs}/${mac}`;
}

/** What the path after the report path says. */
export type ReportPath =
  | { kind: 'bare' }
  | { kind: 'signed'; run: RunRef; mac: string }
  | { kind: 'malformed'; reason: string };

/**
 * Reads the path after REPORT_PATH ('' or '/' for the bare v2 path). Pure and cheap: run on every request
 * before anything else.
 */
export function parseReportPath(rest: string): ReportPath {
  if (rest === '' || rest === '/') return { kind: 'bare' };
  const parts = rest.split('/');
  const [empty, namespace, checkName, uuid, deadline, mac, ...extra] = parts;
  if (
    empty !== '' ||
    extra.length > 0 ||
    !namespace ||
    !checkName ||
    !uuid ||
    deadline === undefined ||
    mac === undefined ||
    !EPOCH_MS.test(deadline) ||
    !NAME.test(namespace) ||
    !NAME.test(checkName) ||
    !UUID.test(uuid) ||
    !MAC.test(mac)
  ) {
    return {
      kind: 'malformed',
      reason:
        'the reporting URL is not one khrun handed out (expected .../<namespace>/<check>/<run UUID>/<deadline>/<token>); ' +
        'POST to the KH_REPORTING_URL of the checker pod, unchanged',
    };
  }
  return { kind: 'signed', run: { namespace, checkName, uuid, deadlineMs: Number(deadline) }, mac };
}

/** Whether mac is this run's under key; constant time. */
export function verifyRun(key: ReportKey, run: RunRef, mac: string): boolean {
  const expected = macOf(key, run);
  const given = Buffer.from(mac, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * KH_REPORTING_URL for one run: a fixed URL (a shared endpoint without a key), or one signed per run.
 * The iteration calls it once it knows the run.
 */
export type ReportingUrl = string | ((run: RunRef) => string);

export function reportingUrlFor(url: ReportingUrl, run: RunRef): string {
  return typeof url === 'string' ? url : url(run);
}
