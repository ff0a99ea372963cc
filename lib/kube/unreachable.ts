import type { HttpLibrary } from '@kubernetes/client-node';
import { Observable } from '@kubernetes/client-node';
import { isUnreachable } from './errors.ts';

/** The transport codes a person can act on, in words; any other code is shown as it is. */
const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be looked up',
  ETIMEDOUT: 'timed out connecting',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
};

/**
 * A request that never reached the API server (refused, no such host, timed out, reset): no HTTP status.
 * `server` is the kubeconfig's server URL, the address a person checks. It keeps the transport error's
 * `code` and `type`, so isUnreachable and isTransientApiError classify it as they did the original (its
 * `cause`).
 */
export class ApiServerUnreachableError extends Error {
  override readonly name = 'ApiServerUnreachableError';
  readonly server: string;
  readonly code: string | undefined;
  readonly type = 'system';
  /** The code in words: "connection refused". */
  readonly reason: string;

  constructor(server: string, cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    const known = typeof code === 'string' ? code : undefined;
    const reason = known ? (REASONS[known] ?? known) : cause instanceof Error ? cause.message : String(cause);
    const said = cause instanceof Error ? cause.message : String(cause);
    super(`cannot reach the Kubernetes API server ${server} (${reason}): ${said}`, { cause });
    this.server = server;
    this.code = known;
    this.reason = reason;
  }
}

/** Wraps an HTTP library so a request that could not reach `server` fails with ApiServerUnreachableError. */
export function namingServer(inner: HttpLibrary, server: string): HttpLibrary {
  return {
    send(request) {
      return new Observable(
        inner
          .send(request)
          .toPromise()
          .catch((error: unknown) => {
            throw isUnreachable(error) && !(error instanceof ApiServerUnreachableError)
              ? new ApiServerUnreachableError(server, error)
              : error;
          }),
      );
    },
  };
}
