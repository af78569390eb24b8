// Typed domain errors. Domain code says what went wrong (kind + stable code + sentence);
// only src/http/errors.ts turns a kind into an HTTP status.

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

/** Seconds a client waits before asking again after the mail server failed for a while. */
export const MAIL_RETRY_AFTER_S = 60;

/**
 * A message that could not be handed to the mail server: a permanent refusal of the
 * recipient is the client's mistake (`address_refused`, naming the address); anything
 * else is temporary (`mail_unavailable`, retry after a minute).
 */
export function mailFailure(kind: "refused" | "transient", address: string): DomainError {
  return kind === "refused"
    ? new DomainError("invalid", "address_refused", `The mail server refused the address ${address}; check it for a typo.`)
    : new DomainError("unavailable", "mail_unavailable", "The mail server could not take the message; try again shortly.", MAIL_RETRY_AFTER_S);
}
