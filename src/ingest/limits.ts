// The request rates ingest allows: per client (spec, Limits: batches 10/s with bursts of 20,
// web events 30/s with 60), per sender of requests that claim a proxy, and per org in
// events, in proportion to the plan. A client is its network, keyed by clientKey
// (src/util/client-key.ts): an IPv6 /64 is one client, whatever address of it is used.

import { RateLimiter, type BucketSpec } from "../util/rate-limit.ts";

export class RequestLimits {
  readonly batchClients: RateLimiter;
  readonly webClients: RateLimiter;
  /** Per sender of requests that claim a proxy: charged only by their refusals before the secret checks out. */
  readonly proxyRefusals: RateLimiter;
  /** The same for refusals caused by the body, at ten times the rate (see request-steps.ts). */
  readonly proxyBodyRefusals: RateLimiter;
  /**
   * Per org, in events, keyed by org id; the spec of each call comes from the plan (keySpec).
   * All the org's keys and apps share it, so more of them buy no more rate: the org gets what
   * one key would. (A bucket per key with the same spec could never run out first: every
   * event it would count is counted here too.)
   */
  readonly orgRates: RateLimiter;

  /** `now`: the limiters read the same clock as everything else, so tests can drive it. */
  constructor(now: () => number) {
    this.batchClients = new RateLimiter({ ratePerSecond: 10, burst: 20 }, now);
    this.webClients = new RateLimiter({ ratePerSecond: 30, burst: 60 }, now);
    this.proxyRefusals = new RateLimiter({ ratePerSecond: 30, burst: 60 }, now);
    this.proxyBodyRefusals = new RateLimiter({ ratePerSecond: 300, burst: 600 }, now);
    this.orgRates = new RateLimiter({ ratePerSecond: 50, burst: 3000 }, now);
  }
}

const keySpecs = new Map<number, BucketSpec>();

/** The event rate of one key, and of all of an org's keys together: in proportion to the plan (20x its average rate), at least 50/s, averaged over a minute. */
export function keySpec(eventsPerMonth: number): BucketSpec {
  let spec = keySpecs.get(eventsPerMonth);
  if (!spec) {
    const rate = Math.max(50, (eventsPerMonth / (30 * 86_400)) * 20);
    spec = { ratePerSecond: rate, burst: rate * 60 };
    keySpecs.set(eventsPerMonth, spec);
  }
  return spec;
}
