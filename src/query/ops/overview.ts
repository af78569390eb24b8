// overview: daily series and totals. Unfiltered, from the rollups (daily_totals); with
// filters, from the events. Same definitions both ways (docs/metrics.md).

import type { QueryContext } from "../context.ts";
import { dayKey, scanOptions, windowDays } from "../context.ts";
import { collectSessions, DAY_MS, durationSeconds, isBounce, median } from "../sessions.ts";
import { scan } from "../scan.ts";
import { dayNumber, DurationHistogram } from "../../store/rollups.ts";

export interface DayPoint {
  day: string;
  events: number;
  sessions: number;
  users: number;
}

export interface Period {
  from: string;
  to: string;
  series: DayPoint[];
  totals: {
    events: number;
    pageviews: number;
    sessions: number;
    users: number;
    bounce_rate: number;
    events_per_session: number;
    median_session_seconds: number;
  };
}

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10000) / 10000);

export function period(q: QueryContext): Period {
  const days = windowDays(q);
  const series = new Map(days.map((d) => [d, { day: d, events: 0, sessions: 0, users: 0 }]));
  let events = 0;
  let pageviews = 0;
  let sessions = 0;
  let bounces = 0;
  let users = 0;
  let medianSeconds = 0;
  if (q.filters.length === 0) {
    const hist = new DurationHistogram();
    for (const d of days) {
      const t = q.rollups.totals(q.app, dayNumber(d), q.debug, hist);
      const p = series.get(d)!;
      p.events = t.events;
      p.sessions = t.sessions;
      p.users = t.users;
      events += t.events;
      pageviews += t.pageviews;
      sessions += t.sessions;
      bounces += t.bounces;
      users += t.users;
    }
    medianSeconds = hist.median();
  } else {
    const { startMs, endMs } = q.window;
    const visitors = new Map<string, Set<number>>();
    const pv = new Map<object, number>();
    scan(q.chunks(startMs, endMs), scanOptions(q, startMs, endMs), (c, i, x) => {
      const d = dayKey(c.ts[i]!);
      series.get(d)!.events++;
      events++;
      let code = pv.get(c);
      if (code === undefined) pv.set(c, (code = c.dicts.name.find("pageview")));
      if (c.name[i] === code) pageviews++;
      (visitors.get(d) ?? visitors.set(d, new Set()).get(d)!).add(c.visitor[x]!);
    }, q.budget);
    for (const [d, v] of visitors) {
      series.get(d)!.users = v.size;
      users += v.size;
    }
    // Sessions count on the day of their first matching event: look a day either side.
    const all = collectSessions(q.chunks(startMs - DAY_MS, endMs + DAY_MS), scanOptions(q, startMs - DAY_MS, endMs + DAY_MS), q.budget);
    const durations: number[] = [];
    for (const s of all) {
      if (s.first < startMs || s.first >= endMs) continue;
      series.get(dayKey(s.first))!.sessions++;
      sessions++;
      if (isBounce(s)) bounces++;
      durations.push(durationSeconds(s.last - s.first));
    }
    medianSeconds = median(durations);
  }
  return {
    from: q.window.from,
    to: q.window.to,
    series: [...series.values()],
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
