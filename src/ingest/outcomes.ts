// The closed set of ingest outcomes, and counters of them per app and UTC day (for the
// usage endpoint). Every event or request that reaches ingest ends in exactly one.

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
] as const;
export type Outcome = (typeof OUTCOMES)[number];

export type OutcomeCounts = Partial<Record<Outcome, number>>;

export class UsageCounters {
  /** app -> day -> counts */
  private byApp = new Map<number, Map<string, OutcomeCounts>>();

  add(app: number, day: string, outcome: Outcome, n = 1) {
    if (n <= 0) return;
    let days = this.byApp.get(app);
    if (!days) this.byApp.set(app, (days = new Map()));
    let c = days.get(day);
    if (!c) days.set(day, (c = {}));
    c[outcome] = (c[outcome] ?? 0) + n;
  }

  addAll(app: number, day: string, counts: OutcomeCounts) {
    for (const [k, v] of Object.entries(counts)) this.add(app, day, k as Outcome, v);
  }

  /** Sums per outcome over the inclusive day range. */
  range(app: number, from: string, to: string): OutcomeCounts {
    const out: OutcomeCounts = {};
    for (const [day, c] of this.byApp.get(app) ?? []) {
      if (day < from || day > to) continue;
      for (const [k, v] of Object.entries(c)) out[k as Outcome] = (out[k as Outcome] ?? 0) + v;
    }
    return out;
  }

  /** Everything, for a checkpoint. */
  entries(): [number, string, OutcomeCounts][] {
    const out: [number, string, OutcomeCounts][] = [];
    for (const [app, days] of this.byApp) for (const [day, c] of days) out.push([app, day, c]);
    return out;
  }

  dropApp(app: number) {
    this.byApp.delete(app);
  }
}
