// Token buckets keyed by a string, in memory. Used for sign-in link requests now and
// ingest later. Keys are hashed by callers when they derive from a client address, and
// nothing here is persisted or logged.

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
  private buckets = new Map<string | number, Bucket>();
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
    const b = this.buckets.get(key);
    if (!b) return 0;
    const tokens = Math.min(spec.burst, b.tokens + ((this.now() - b.at) / 1000) * spec.ratePerSecond);
    return tokens >= cost ? 0 : Math.max(1, Math.ceil((cost - tokens) / spec.ratePerSecond));
  }

  /** Full buckets carry no information: drop them so memory stays bounded. */
  private sweep(t: number) {
    if (t - this.lastSweep < 10_000 && this.buckets.size < this.maxKeys) return;
    this.lastSweep = t;
    const refill = (this.spec.burst / this.spec.ratePerSecond) * 1000;
    for (const [k, b] of this.buckets) if (t - b.at >= refill) this.buckets.delete(k);
    if (this.buckets.size >= this.maxKeys) this.buckets.clear();
  }
}
