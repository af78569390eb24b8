// overview: a series of points (local hours, days, ISO weeks or months of the app's zone)
// and totals. Unfiltered, by day, week or month, from the rollups (daily_totals) when they
// are kept in the app's zone: weeks and months sum their days, and merge the days'
// visitor sketches; otherwise (filters, hours, rollups in another zone) from the events.
// Same definitions both ways (docs/metrics.md).

import type { QueryContext } from "../context.ts";
import { scanOptions } from "../context.ts";
import { collectSessions, durationSeconds, SESSION_STEP } from "../session-fold.ts";
import { DAY_MS } from "../../util/time.ts";
import { columnsOf } from "../../store/chunk.ts";
import { passingRuns, scanSteps } from "../scan.ts";
import { inRanges, type Work } from "../work.ts";
import { DurationHistogram } from "../../store/rollups.ts";
import { DistinctCounter } from "../../structs/hll.ts";
import { buckets, SLOT_MS, type Interval } from "../buckets.ts";
import type { Period } from "../stats-engine.ts";

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10000) / 10000);

/** True when this overview is answered from the rollups: no filters, not by hour, rollups in the app's zone. */
export function fromRollups(q: QueryContext, interval: Interval): boolean {
  return q.filters.length === 0 && interval !== "hour" && q.rollupZone === q.window.timezone;
}

/** A worker thread's share of a period (QueryContext.part): with what the ratios and the median are made of. */
export type PeriodShare = Period & { bounces: number; durations: Map<number, number> };

export function* period(q: QueryContext, interval: Interval = "day"): Work<PeriodShare> {
  const b = buckets(q.window, interval);
  const series = b.date.map((date, k) => ({ date, day: b.day[k]!, events: 0, sessions: 0, users: 0, pageviews: 0 }));
  let events = 0;
  let pageviews = 0;
  let sessions = 0;
  let bounces = 0;
  let users = 0;
  let medianSeconds = 0;
  let durationMap = new Map<number, number>();
  if (fromRollups(q, interval)) {
    const hist = new DurationHistogram();
    // Weeks and months: the days' visitor sketches merged per bucket.
    const merged = interval === "day" ? null : series.map(() => new DistinctCounter());
    for (let d = q.window.fromDay; d <= q.window.toDay; d++) {
      const k = b.ofDay[d - q.window.fromDay]!;
      const p = series[k]!;
      const t = q.rollups.totals(q.app, d, q.debug, hist);
      p.events += t.events;
      p.sessions += t.sessions;
      p.pageviews += t.pageviews;
      if (merged) merged[k]!.merge(t.visitors);
      else p.users = t.users;
      events += t.events;
      pageviews += t.pageviews;
      sessions += t.sessions;
      bounces += t.bounces;
    }
    if (merged) for (let k = 0; k < series.length; k++) series[k]!.users = merged[k]!.count();
    for (const p of series) users += p.users;
    medianSeconds = hist.median();
  } else {
    const { startMs, endMs } = q.window;
    // Buckets by table: one division and one array read per row.
    const table = b.table;
    const base = b.base;
    const visitors = series.map(() => new Set<number>());
    const opts = yield* scanOptions(q, startMs, endMs);
    for (const c of q.chunks(startMs, endMs)) {
      const pvCode = columnsOf(c).column("name").find("pageview");
      const ts = c.ts;
      const name = c.name;
      // A context is one visitor: once added for a bucket, its later rows there add nothing.
      const lastBucket = new Int32Array(c.nctx).fill(-1);
      const runs = passingRuns(c, opts);
      if (runs) {
        // A partition inside the window, filtered per context: whole runs of rows, in time
        // order, so a run within one bucket counts at once.
        const start = c.ctxStart!;
        const byRuns = () => {
          for (let x = 0; x < c.nctx; x++) {
            if (!runs[x]) continue;
            const a = start[x]!;
            const z = start[x + 1]!;
            if (a === z) continue;
            const d0 = table[Math.floor(ts[a]! / SLOT_MS) - base]!;
            const d1 = table[Math.floor(ts[z - 1]! / SLOT_MS) - base]!;
            events += z - a;
            if (d0 === d1) {
              let pv = 0;
              for (let i = a; i < z; i++) if (name[i] === pvCode) pv++;
              pageviews += pv;
              series[d0]!.pageviews += pv;
              series[d0]!.events += z - a;
              visitors[d0]!.add(c.visitor[x]!);
              continue;
            }
            for (let i = a; i < z; i++) {
              const d = table[Math.floor(ts[i]! / SLOT_MS) - base]!;
              series[d]!.events++;
              if (name[i] === pvCode) {
                pageviews++;
                series[d]!.pageviews++;
              }
              if (lastBucket[x] === d) continue;
              lastBucket[x] = d;
              visitors[d]!.add(c.visitor[x]!);
            }
          }
        };
        byRuns();
        yield;
        continue;
      }
      yield* scanSteps([c], opts, (_c, i, x) => {
        const d = table[Math.floor(ts[i]! / SLOT_MS) - base]!;
        series[d]!.events++;
        events++;
        if (name[i] === pvCode) {
          pageviews++;
          series[d]!.pageviews++;
        }
        if (lastBucket[x] === d) return;
        lastBucket[x] = d;
        visitors[d]!.add(c.visitor[x]!);
      });
    }
    for (let d = 0; d < series.length; d++) {
      series[d]!.users = visitors[d]!.size;
      users += visitors[d]!.size;
    }
    // By hour, a person seen in several hours of a day is still one of that day's users in
    // the totals, as with every other interval: the hours' ids are united per local day.
    if (interval === "hour") users = usersByDay(series, visitors);
    // Sessions count in the bucket of their first matching event: look a day either side.
    const all = yield* collectSessions(q.chunks(startMs - DAY_MS, endMs + DAY_MS), yield* scanOptions(q, startMs - DAY_MS, endMs + DAY_MS));
    const durations = new DurationHistogram();
    // In plain functions, not the generator's body, where the engine optimizes loops less.
    const pass = (from: number, to: number) => {
      for (let k = from; k < to; k++) {
        const first = all.first[k]!;
        if (first < startMs || first >= endMs) continue;
        series[table[Math.floor(first / SLOT_MS) - base]!]!.sessions++;
        sessions++;
        durations.add(durationSeconds(all.last[k]! - first));
        if (all.isBounce(k)) bounces++;
      }
    };
    yield* inRanges(all.n, SESSION_STEP, pass);
    medianSeconds = durations.median();
    if (q.part) durationMap = durations.toMap();
  }
  return {
    from: q.window.from,
    to: q.window.to,
    timezone: q.window.timezone,
    series,
    totals: {
      events,
      pageviews,
      sessions,
      users,
      bounce_rate: q.kind === "web" ? ratio(bounces, sessions) : 0,
      events_per_session: ratio(events, sessions),
      median_session_seconds: medianSeconds,
    },
    bounces,
    durations: durationMap,
  };
}

/** The period of a query answered in shares (one per worker thread, each a set of visitors): sums, ratios and the median over them. */
export function mergePeriods(shares: PeriodShare[], kind: "app" | "web"): Period {
  const first = shares[0]!;
  const series = first.series.map((p) => ({ ...p }));
  const t = { events: 0, pageviews: 0, sessions: 0, users: 0 };
  let bounces = 0;
  const hist = new DurationHistogram();
  for (const s of shares) {
    for (let k = 0; s !== first && k < series.length; k++) {
      const p = series[k]!;
      const o = s.series[k]!;
      p.events += o.events;
      p.sessions += o.sessions;
      p.users += o.users;
      p.pageviews += o.pageviews;
    }
    t.events += s.totals.events;
    t.pageviews += s.totals.pageviews;
    t.sessions += s.totals.sessions;
    t.users += s.totals.users;
    bounces += s.bounces;
    hist.addAll(s.durations);
  }
  return {
    from: first.from,
    to: first.to,
    timezone: first.timezone,
    series,
    totals: {
      ...t,
      bounce_rate: kind === "web" ? ratio(bounces, t.sessions) : 0,
      events_per_session: ratio(t.events, t.sessions),
      median_session_seconds: hist.median(),
    },
  };
}

/** A share's period as the answer shows it (without what merging needs). */
export function periodOf(s: PeriodShare): Period {
  const { bounces: _b, durations: _d, ...period } = s;
  return period;
}

/** Distinct visitor ids per local day, summed: the totals' users for hourly points. */
function usersByDay(series: { day: string }[], visitors: Set<number>[]): number {
  let users = 0;
  let day = "";
  let seen = new Set<number>();
  for (let k = 0; k < series.length; k++) {
    if (series[k]!.day !== day) {
      users += seen.size;
      seen = new Set();
      day = series[k]!.day;
    }
    for (const v of visitors[k]!) seen.add(v);
  }
  return users + seen.size;
}
