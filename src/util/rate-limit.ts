// Token buckets keyed by a string or a number, in memory. Used for sign-in link requests and
// ingest. Keys are hashed by callers when they derive from a client address, and
// nothing here is persisted or logged.

import { NumberMap } from "../structs/number-map.ts";

export interface BucketSpec {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** Bucket size: the largest burst. */
  burst: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private buckets = new Map<string, Bucket>();
  /**
   * Buckets under number keys (hashed client addresses, tens of thousands at once under
   * web load) as (tokens, at) in typed arrays: no object per client for the collector to mark.
   */
  private numbered = new NumberMap(2);
  private lastSweep = 0;

  constructor(
    private spec: BucketSpec,
    private now: () => number = Date.now,
    private maxKeys = 100_000,
  ) {}

  /**
   * Takes `cost` tokens; answers 0 when allowed, else the seconds to wait before retrying.
   * `spec` overrides the limiter's own for this key (per-plan rates).
   */
  take(key: string | number, cost = 1, spec: BucketSpec = this.spec): number {
    const t = this.now();
    this.sweep(t);
    if (typeof key === "number") {
      const m = this.numbered;
      const o = m.slot(key) * 2;
      const v = m.vals;
      const tokens = m.added ? spec.burst : Math.min(spec.burst, v[o]! + ((t - v[o + 1]!) / 1000) * spec.ratePerSecond);
      v[o + 1] = t;
      if (tokens >= cost) {
        v[o] = tokens - cost;
        return 0;
      }
      v[o] = tokens;
      return Math.max(1, Math.ceil((Math.min(cost, spec.burst) - tokens) / spec.ratePerSecond));
    }
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: spec.burst, at: t };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(spec.burst, b.tokens + ((t - b.at) / 1000) * spec.ratePerSecond);
      b.at = t;
    }
    if (b.tokens >= cost) {
      b.tokens -= cost;
      return 0;
    }
    return Math.max(1, Math.ceil((Math.min(cost, spec.burst) - b.tokens) / spec.ratePerSecond));
  }

  /** The seconds to wait before `cost` tokens are there, without taking any (0: now). */
  peek(key: string | number, cost = 1, spec: BucketSpec = this.spec): number {
    let held: number;
    let at: number;
    if (typeof key === "number") {
      const s = this.numbered.find(key);
      if (s < 0) return 0;
      held = this.numbered.vals[s * 2]!;
      at = this.numbered.vals[s * 2 + 1]!;
    } else {
      const b = this.buckets.get(key);
      if (!b) return 0;
      held = b.tokens;
      at = b.at;
    }
    const tokens = Math.min(spec.burst, held + ((this.now() - at) / 1000) * spec.ratePerSecond);
    return tokens >= cost ? 0 : Math.max(1, Math.ceil((cost - tokens) / spec.ratePerSecond));
  }

  /** Full buckets carry no information: drop them so memory stays bounded. */
  private sweep(t: number) {
    if (t - this.lastSweep < 10_000 && this.buckets.size < this.maxKeys && this.numbered.size < this.maxKeys) return;
    this.lastSweep = t;
    const refill = (this.spec.burst / this.spec.ratePerSecond) * 1000;
    for (const [k, b] of this.buckets) if (t - b.at >= refill) this.buckets.delete(k);
    if (this.buckets.size >= this.maxKeys) this.buckets.clear();
    const v = this.numbered.vals;
    this.numbered.deleteWhere((_, s) => t - v[s * 2 + 1]! >= refill);
    if (this.numbered.size >= this.maxKeys) this.numbered.clear();
  }
}
