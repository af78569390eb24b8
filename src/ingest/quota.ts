// The org's monthly event quota, enforced from memory on every request: accepted events
// per org per UTC calendar month, up to hard_limit_percent of the effective limit.
// Events are reserved before the durable write (sink.ts) and released if it fails.

import { utcMonth } from "../util/time.ts";

export class Quota {
  /** Enforced: committed plus reserved for writes under way. */
  private used = new Map<number, { month: string; n: number }>();
  /** On disk only (what a checkpoint records). */
  private committed = new Map<number, { month: string; n: number }>();

  constructor(private hardLimitPercent: () => number) {}

  usedThisMonth(orgId: number, now: number): number {
    const u = this.used.get(orgId);
    return u && u.month === utcMonth(now) ? u.n : 0;
  }

  /** Reserves up to `want` events; answers how many fit under the hard limit. */
  reserve(orgId: number, limit: number, want: number, now: number): number {
    const month = utcMonth(now);
    let u = this.used.get(orgId);
    if (!u || u.month !== month) this.used.set(orgId, (u = { month, n: 0 }));
    const cap = Math.floor((limit * this.hardLimitPercent()) / 100);
    const take = Math.max(0, Math.min(want, cap - u.n));
    u.n += take;
    return take;
  }

  release(orgId: number, n: number, now: number) {
    const u = this.used.get(orgId);
    if (u && u.month === utcMonth(now)) u.n = Math.max(0, u.n - n);
  }

  /** A reservation whose events are now on disk. */
  commit(orgId: number, n: number, now: number) {
    bump(this.committed, orgId, n, utcMonth(now));
  }

  /** Sets a month's count from a checkpoint. */
  restore(orgId: number, month: string, used: number) {
    for (const m of [this.used, this.committed]) {
      const u = m.get(orgId);
      if (!u || u.month < month) m.set(orgId, { month, n: used });
    }
  }

  /** Committed counts, for a checkpoint. */
  entries(): [number, string, number][] {
    return [...this.committed].map(([org, u]) => [org, u.month, u.n]);
  }

  /** A purged org: nothing of its count is kept. */
  dropOrg(orgId: number) {
    this.used.delete(orgId);
    this.committed.delete(orgId);
  }

  /** Counts events already accepted and on disk (replay at start-up). */
  add(orgId: number, n: number, at: number) {
    const month = utcMonth(at);
    bump(this.used, orgId, n, month);
    bump(this.committed, orgId, n, month);
  }
}

function bump(m: Map<number, { month: string; n: number }>, orgId: number, n: number, month: string) {
  const u = m.get(orgId);
  if (!u || u.month < month) m.set(orgId, { month, n });
  else if (u.month === month) u.n += n;
}
