import { request } from 'node:https';

/**
 * GET over HTTPS without verifying the certificate: used only to see whether a component that has just
 * started serves yet (its certificate may not be known to us until it has written it).
 */
export function probeStatus(
  url: string,
  opts: { token?: string; signal?: AbortSignal } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        rejectUnauthorized: false,
        signal: opts.signal,
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
        timeout: 5_000,
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('timeout', () => req.destroy(new Error(`no answer from ${url} within 5s`)));
    req.once('error', reject);
    req.end();
  });
}
