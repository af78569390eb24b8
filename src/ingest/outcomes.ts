// Counters of ingest outcomes per app and UTC day, for the usage endpoint and checkpoints.

import type { Outcome, OutcomeCounts } from "../model/outcomes.ts";

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
