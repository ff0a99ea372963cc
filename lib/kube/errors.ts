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
