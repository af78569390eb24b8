// The closed set of ingest outcomes: every event or request that reaches ingest ends in
// exactly one. Shared by ingest, the log's records, the usage endpoint and /metrics.

export const DROP_REASONS = [
  "invalid_event", // an item of a batch that is not an event object
  "invalid_name", // name missing, empty, over 64 characters or with control characters
  "reserved_name", // name starts with $
  "invalid_time", // ts missing or not ISO 8601 UTC
  "future_time", // ts more than 10 minutes ahead
  "too_old", // ts older than 7 days
  "invalid_session", // session_id missing or not a string of 1-128 characters
  "bot", // a bot or crawler
  "paused", // the app is paused
  "over_quota", // the org's monthly limit is used up
  "name_limit", // a new event name past the app's daily bound on distinct names (ingest/cardinality.ts)
] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export const OUTCOMES = [
  "accepted",
  "duplicate", // events of a batch id already stored (answered from the first answer)
  ...DROP_REASONS,
  "rate_limited", // requests refused with 429
  "unknown_key", // requests with an unknown or revoked key (counted under the key's app when known)
  "malformed", // requests refused with 400
  "origin_refused", // web requests from an origin the site does not allow
  "too_large", // requests refused with 413
  // Counted in properties, not events: a property dropped from an event that was kept.
  "property_key_limit", // a new property key past the app's daily bound on distinct keys
  "property_value_limit", // a new text value past the daily bound on a key's distinct values
] as const;
export type Outcome = (typeof OUTCOMES)[number];

export type OutcomeCounts = Partial<Record<Outcome, number>>;
