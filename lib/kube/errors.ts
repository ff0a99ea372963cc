import { ApiException } from '@kubernetes/client-node';

/** Kubernetes API failures by what the caller does about them; classified by status code, never by text. */
export const ApiErrorKind = {
  NotFound: 'NotFound',
  Conflict: 'Conflict',
  AlreadyExists: 'AlreadyExists',
  Gone: 'Gone',
  Invalid: 'Invalid',
  Forbidden: 'Forbidden',
  Unauthorized: 'Unauthorized',
  TooManyRequests: 'TooManyRequests',
  Unavailable: 'Unavailable',
  Other: 'Other',
} as const;
export type ApiErrorKind = (typeof ApiErrorKind)[keyof typeof ApiErrorKind];

export function statusCodeOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { code?: unknown; statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** The reason field of the v1.Status body; client-node hands the body over as raw text. */
function statusReason(error: unknown): string | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const body: unknown = error.body;
  try {
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { reason?: unknown } | null;
    return typeof parsed?.reason === 'string' ? parsed.reason : undefined;
  } catch {
    return undefined;
  }
}

export function classifyApiError(error: unknown): ApiErrorKind {
  switch (statusCodeOf(error)) {
    case 404:
      return ApiErrorKind.NotFound;
    case 409:
      return statusReason(error) === 'AlreadyExists' ? ApiErrorKind.AlreadyExists : ApiErrorKind.Conflict;
    case 410:
      return ApiErrorKind.Gone;
    case 422:
      return ApiErrorKind.Invalid;
    case 403:
      return ApiErrorKind.Forbidden;
    case 401:
      return ApiErrorKind.Unauthorized;
    case 429:
      return ApiErrorKind.TooManyRequests;
    case 500:
    case 502:
    case 503:
    case 504:
      return ApiErrorKind.Unavailable;
    default:
      return ApiErrorKind.Other;
  }
}

/**
 * The API server could not be reached at all (connection refused or reset, closed mid-answer, DNS): the
 * request failed below HTTP, so there is no status code. client-node reports these as FetchError.
 */
export function isUnreachable(error: unknown): boolean {
  if (error instanceof ApiException || statusCodeOf(error) !== undefined) return false;
  const e = error as { type?: unknown; code?: unknown } | null;
  return e?.type === 'system' || (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code));
}

/**
 * Worth the same request again shortly: the API server (or the proxy in front of it) was unreachable,
 * overloaded or restarting. A 500 is not: the server answered, and may answer the same again.
 */
export function isTransientApiError(error: unknown): boolean {
  const status = statusCodeOf(error);
  return status === 429 || status === 502 || status === 503 || status === 504 || isUnreachable(error);
}

/**
 * An error as text for logs, without the query strings of request URLs: client errors carry the URL, and
 * its label selector can hold a run UUID (kuberhealthy-run-id=...), which is a report credential.
 */
export function loggableError(error: unknown): string {
  return redactUrlQueries(String(error));
}

export function redactUrlQueries(text: string): string {
  return text.replace(/(https?:\/\/[^\s?#"'\\]+)\?[^\s"'\\]*/g, '$1?…');
}

export const isNotFound = (e: unknown) => classifyApiError(e) === ApiErrorKind.NotFound;
export const isConflict = (e: unknown) => classifyApiError(e) === ApiErrorKind.Conflict;
export const isAlreadyExists = (e: unknown) => classifyApiError(e) === ApiErrorKind.AlreadyExists;

/** A short human message from an API error: the Status message when there is one. */
export function apiErrorMessage(error: unknown): string {
  if (error instanceof ApiException) {
    try {
      const parsed = (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as {
        message?: string;
      };
      if (parsed?.message) return `${error.code}: ${parsed.message}`;
    } catch {
      // fall through to the generic text
    }
    return `HTTP ${error.code}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Someone else wrote first (resourceVersion precondition failed, or the object already exists). */
export class WriteConflict extends Error {
  override readonly name = 'WriteConflict';
}
