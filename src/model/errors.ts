// Typed errors of every part below http (domain, query, ingest): what went wrong as a kind,
// a stable code and a sentence; only src/http/errors.ts turns a kind into an HTTP status.

export type ErrorKind =
  | "invalid" // the request is well formed but not acceptable
  | "unauthenticated" // no valid credentials
  | "forbidden" // known caller, not allowed
  | "not_found" // unknown, or not the caller's to see
  | "conflict" // state does not allow it
  | "gone" // existed, expired for good
  | "too_large" // the request body is over its limit
  | "too_heavy" // a query over its time or memory budget
  | "rate_limited" // retry after `retryAfter` seconds
  | "upstream" // a service we depend on (the payment provider) refused the call
  | "unavailable"; // temporary; retry after `retryAfter` seconds

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export const notFound = (what = "resource") => new DomainError("not_found", "not_found", `No such ${what}.`);
export const forbidden = (message: string, code = "forbidden") => new DomainError("forbidden", code, message);
export const invalid = (code: string, message: string) => new DomainError("invalid", code, message);
export const conflict = (code: string, message: string) => new DomainError("conflict", code, message);
