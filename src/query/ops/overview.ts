// overview: daily series and totals. Unfiltered, from the rollups (daily_totals); with
// filters, from the events. Same definitions both ways (docs/metrics.md).

import type { QueryContext } from "../context.ts";
import { scanOptions, windowDays } from "../context.ts";
import { collectSessions, durationSeconds, SESSION_STEP } from "../session-fold.ts";
import { DAY_MS } from "../../util/time.ts";
import { columnsOf } from "../../store/chunk.ts";
import { passingRuns, scanSteps } from "../scan.ts";
import { inRanges, type Work } from "../work.ts";
import { dayNumber, DurationHistogram } from "../../store/rollups.ts";
import type { Period } from "../stats-engine.ts";

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10000) / 10000);

export function* period(q: QueryContext): Work<Period> {
  const days = windowDays(q);
  // One point per day of the window, by index from its start (UTC midnight).
  const series = days.map((d) => ({ day: d, events: 0, sessions: 0, users: 0, pageviews: 0 }));
  let events = 0;
  let pageviews = 0;
  let sessions = 0;
  let bounces = 0;
  let users = 0;
  let medianSeconds = 0;
  if (q.filters.length === 0) {
    const hist = new DurationHistogram();
    for (const p of series) {
      const t = q.rollups.totals(q.app, dayNumber(p.day), q.debug, hist);
      p.events = t.events;
      p.sessions = t.sessions;
      p.users = t.users;
      p.pageviews = t.pageviews;
      events += t.events;
      pageviews += t.pageviews;
      sessions += t.sessions;
      bounces += t.bounces;
      users += t.users;
    }
    medianSeconds = hist.median();
  } else {
    const { startMs, endMs } = q.window;
    // Days by index: no date string per row.
    const visitors = series.map(() => new Set<number>());
    const opts = yield* scanOptions(q, startMs, endMs);
    for (const c of q.chunks(startMs, endMs)) {
      const pvCode = columnsOf(c).column("name").find("pageview");
      const ts = c.ts;
      const name = c.name;
      // A context is one visitor: once added for a day, its later rows that day add nothing.
      const lastDay = new Int32Array(c.nctx).fill(-1);
      const runs = passingRuns(c, opts);
      if (runs) {
        // A partition inside the window, filtered per context: whole runs of rows, in time
        // order, so a run within one day counts at once.
        const start = c.ctxStart!;
        const byRuns = () => {
          for (let x = 0; x < c.nctx; x++) {
            if (!runs[x]) continue;
            const a = start[x]!;
            const b = start[x + 1]!;
            if (a === b) continue;
            const d0 = Math.floor((ts[a]! - startMs) / DAY_MS);
            const d1 = Math.floor((ts[b - 1]! - startMs) / DAY_MS);
            events += b - a;
            if (d0 === d1) {
              let pv = 0;
              for (let i = a; i < b; i++) if (name[i] === pvCode) pv++;
              pageviews += pv;
              series[d0]!.pageviews += pv;
              series[d0]!.events += b - a;
              visitors[d0]!.add(c.visitor[x]!);
              continue;
            }
            for (let i = a; i < b; i++) {
              const d = Math.floor((ts[i]! - startMs) / DAY_MS);
              series[d]!.events++;
              if (name[i] === pvCode) {
                pageviews++;
                series[d]!.pageviews++;
              }
              if (lastDay[x] === d) continue;
              lastDay[x] = d;
              visitors[d]!.add(c.visitor[x]!);
            }
          }
        };
        byRuns();
        yield;
        continue;
      }
      yield* scanSteps([c], opts, (_c, i, x) => {
        const d = Math.floor((ts[i]! - startMs) / DAY_MS);
        series[d]!.events++;
        events++;
        if (name[i] === pvCode) {
          pageviews++;
          series[d]!.pageviews++;
        }
        if (lastDay[x] === d) return;
        lastDay[x] = d;
        visitors[d]!.add(c.visitor[x]!);
      });
    }
    for (let d = 0; d < series.length; d++) {
      series[d]!.users = visitors[d]!.size;
      users += visitors[d]!.size;
    }
    // Sessions count on the day of their first matching event: look a day either side.
    const all = yield* collectSessions(q.chunks(startMs - DAY_MS, endMs + DAY_MS), yield* scanOptions(q, startMs - DAY_MS, endMs + DAY_MS));
    const durations = new DurationHistogram();
    // In plain functions, not the generator's body, where the engine optimizes loops less.
    const pass = (from: number, to: number) => {
      for (let k = from; k < to; k++) {
        const first = all.first[k]!;
        if (first < startMs || first >= endMs) continue;
        series[Math.floor((first - startMs) / DAY_MS)]!.sessions++;
        sessions++;
        durations.add(durationSeconds(all.last[k]! - first));
        if (all.isBounce(k)) bounces++;
      }
    };
    yield* inRanges(all.n, SESSION_STEP, pass);
    medianSeconds = durations.median();
  }
  return {
    from: q.window.from,
    to: q.window.to,
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
  };
}

export function previousWindow(w: QueryContext["window"]): QueryContext["window"] {
  const len = w.endMs - w.startMs;
  const startMs = w.startMs - len;
  const endMs = w.startMs;
  const day = (t: number) => new Date(t).toISOString().slice(0, 10);
  return { from: day(startMs), to: day(endMs - DAY_MS), startMs, endMs, days: w.days };
}
