// Mail failures as typed errors (src/model/errors.ts holds the error type itself).

import { DomainError } from "../model/errors.ts";

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
    : new DomainError(
        "unavailable",
        "mail_unavailable",
        "The mail server could not take the message; try again shortly.",
        MAIL_RETRY_AFTER_S,
      );
}
