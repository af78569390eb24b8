// The reference: plain loops over plain event objects, written for clarity, against
// which the store's rollups and the query operators are compared.

import type { StoredEvent } from "../../src/model/event.ts";

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Whole seconds; over an hour, rounded down to the minute (docs/metrics.md). */
export function refDuration(ms: number): number {
  const s = Math.floor(ms / 1000);
  return s < 3600 ? s : Math.floor(s / 60) * 60;
}

export function refMedian(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export interface RefDay {
  events: number;
  pageviews: number;
  users: number;
  sessions: number;
  bounces: number;
  durations: number[];
}

/** Daily totals for one app and debug flag: events by their day, sessions by their first event's day (UTC days unless `dayOf` says otherwise). */
export function refDaily(events: StoredEvent[], debug: boolean, dayOf: (ms: number) => string = day): Map<string, RefDay> {
  const out = new Map<string, RefDay>();
  const get = (d: string) =>
    out.get(d) ?? out.set(d, { events: 0, pageviews: 0, users: 0, sessions: 0, bounces: 0, durations: [] }).get(d)!;
  const visitors = new Map<string, Set<number>>();
  const sessions = new Map<number, StoredEvent[]>();
  for (const e of events) {
    if (e.debug !== debug) continue;
    const d = get(dayOf(e.ts));
    d.events++;
    if (e.name === "pageview") d.pageviews++;
    (visitors.get(dayOf(e.ts)) ?? visitors.set(dayOf(e.ts), new Set()).get(dayOf(e.ts))!).add(e.visitor);
    (sessions.get(e.session) ?? sessions.set(e.session, []).get(e.session)!).push(e);
  }
  for (const [d, v] of visitors) get(d).users = v.size;
  for (const evs of sessions.values()) {
    const first = Math.min(...evs.map((e) => e.ts));
    const last = Math.max(...evs.map((e) => e.ts));
    const d = get(dayOf(first));
    d.sessions++;
    const pv = evs.filter((e) => e.name === "pageview").length;
    if (evs.length <= 1 && pv <= 1) d.bounces++;
    d.durations.push(refDuration(last - first));
  }
  return out;
}

// ---- stats endpoints, the slow and obvious way ------------------------------------------------

/** A filter: dimension, values, operator (default is); docs/metrics.md, "Filters". */
export type RefFilter = [dim: string, values: string[], op?: "is" | "not" | "contains"];

export interface RefQuery {
  from: number; // ms, inclusive
  to: number; // ms, exclusive
  debug: boolean;
  filters: RefFilter[];
  kind: "app" | "web";
  /** The app's IANA zone (default UTC): days, buckets and heatmap hours are local to it. */
  timezone?: string;
}

/** Whether a value passes a filter; no value (a property's absence too) is "". */
export function refPasses(v: string | undefined, [, vs, op = "is"]: RefFilter): boolean {
  const s = v ?? "";
  if (op === "contains") return s !== "" && vs.some((t) => s.toLowerCase().includes(t.toLowerCase()));
  return vs.includes(s) === (op === "is");
}

/** Repeated `is` filters on one dimension are one, their values ORed; the others stay ANDed. */
function refMerged(filters: RefFilter[]): RefFilter[] {
  const out: RefFilter[] = [];
  const isOf = new Map<string, string[]>();
  for (const [d, vs, op = "is"] of filters) {
    if (op !== "is") out.push([d, vs, op]);
    else if (isOf.has(d)) isOf.get(d)!.push(...vs);
    else {
      isOf.set(d, [...vs]);
      out.push([d, isOf.get(d)!, "is"]);
    }
  }
  return out;
}

/** The query without its filters on name: the funnel and event detail choose their events by name. */
const withoutName = (q: RefQuery): RefQuery => ({ ...q, filters: q.filters.filter(([d]) => d !== "name") });

const DAYMS = 86_400_000;

function dimValue(e: StoredEvent, dim: string): string | undefined {
  if (dim === "name") return e.name;
  if (dim.startsWith("prop:")) {
    const k = dim.slice(5);
    return k in e.sp ? e.sp[k] : k in e.np ? String(e.np[k]) : undefined;
  }
  return (e.dims as Record<string, string>)[dim];
}

export function refSessionPlace(evs: StoredEvent[], which: "entry" | "exit"): string {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts);
  const pvs = sorted.filter((e) => e.name === "pageview");
  if (pvs.length) return (which === "entry" ? pvs[0]! : pvs[pvs.length - 1]!).dims.pathname;
  const e = which === "entry" ? sorted[0]! : sorted[sorted.length - 1]!;
  return e.sp.screen ?? "";
}

/** Events passing debug, filters (entry/exit judged on the session's matching events), in [from, to). */
export function refMatch(all: StoredEvent[], q: RefQuery, from = q.from, to = q.to): StoredEvent[] {
  const filters = refMerged(q.filters);
  const plain = filters.filter(([d]) => d !== "entry" && d !== "exit");
  const sess = filters.filter(([d]) => d === "entry" || d === "exit");
  const pass = (e: StoredEvent) => e.debug === q.debug && plain.every((f) => refPasses(dimValue(e, f[0]), f));
  let evs = all.filter(pass);
  if (sess.length) {
    const near = evs.filter((e) => e.ts >= from - DAYMS && e.ts < to + DAYMS);
    const by = groupBy(near, (e) => e.session);
    const ok = new Set(
      [...by].filter(([, es]) => sess.every((f) => refPasses(refSessionPlace(es, f[0] as "entry" | "exit"), f))).map(([s]) => s),
    );
    evs = evs.filter((e) => ok.has(e.session));
  }
  return evs.filter((e) => e.ts >= from && e.ts < to);
}

export function groupBy<T, K>(xs: T[], key: (x: T) => K): Map<K, T[]> {
  const m = new Map<K, T[]>();
  for (const x of xs) (m.get(key(x)) ?? m.set(key(x), []).get(key(x))!).push(x);
  return m;
}

// ---- time zones, straight from Intl (not src/util/zone.ts: the reference is its own) -------------

export type RefInterval = "hour" | "day" | "week" | "month";

const fmts = new Map<string, Intl.DateTimeFormat>();
/** Local calendar parts of `ms` in `tz`, and the offset as ±HH:MM (or Z). */
export function refLocal(ms: number, tz = "UTC") {
  let f = fmts.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      weekday: "short",
    });
    fmts.set(tz, f);
  }
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(ms)) p[part.type] = part.value;
  const date = `${p.year}-${p.month}-${p.day}`;
  // The offset: local wall time read as UTC, minus the instant (both to the minute).
  const minutes = (Date.parse(`${date}T${p.hour}:${p.minute}:00Z`) - Math.floor(ms / 60_000) * 60_000) / 60_000;
  const abs = Math.abs(minutes);
  const off =
    minutes === 0 ? "Z" : `${minutes < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  const weekday = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].indexOf(p.weekday!) + 1;
  return { date, hour: Number(p.hour), weekday, off };
}

/** The local date of `ms` in `tz`. */
export const refDay = (ms: number, tz = "UTC") => refLocal(ms, tz).date;

/** The first instant of local date `date` in `tz` (searched minute by minute around UTC midnight). */
export function refDayStart(date: string, tz = "UTC"): number {
  const utc = Date.parse(`${date}T00:00:00Z`);
  for (let t = utc - 15 * 3_600_000; t <= utc + 15 * 3_600_000; t += 60_000) if (refDay(t, tz) === date) return t;
  throw new Error(`no start for ${date} in ${tz}`);
}

/** The query window [from, to) of local dates `from`..`to` in `tz`. */
export function refWindow(from: string, to: string, tz = "UTC"): { from: number; to: number } {
  const next = new Date(Date.parse(`${to}T00:00:00Z`) + DAYMS).toISOString().slice(0, 10);
  return { from: refDayStart(from, tz), to: refDayStart(next, tz) };
}

/** The bucket of `ms`: its label (`date` of a point) and the local date it starts on (`day`). */
export function refBucket(ms: number, tz: string, interval: RefInterval): { date: string; day: string } {
  const l = refLocal(ms, tz);
  if (interval === "hour") return { date: `${l.date}T${String(l.hour).padStart(2, "0")}:00${l.off}`, day: l.date };
  if (interval === "day") return { date: l.date, day: l.date };
  if (interval === "month") return { date: `${l.date.slice(0, 7)}-01`, day: `${l.date.slice(0, 7)}-01` };
  const monday = new Date(Date.parse(`${l.date}T00:00:00Z`) - (l.weekday - 1) * DAYMS).toISOString().slice(0, 10);
  return { date: monday, day: monday };
}

/** Every bucket of the window, oldest first (walked a quarter hour at a time: no zone changes offset between). */
export function refBuckets(q: RefQuery, interval: RefInterval): { date: string; day: string }[] {
  const out: { date: string; day: string }[] = [];
  for (let t = q.from; t < q.to; t += 900_000) {
    const b = refBucket(t, q.timezone ?? "UTC", interval);
    if (out.length === 0 || out[out.length - 1]!.date !== b.date) out.push(b);
  }
  return out;
}

const r4 = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10000) / 10000);

/** The overview's period: points by `interval` of the query's zone (users: distinct visitor ids per bucket) and totals. */
export function refOverviewPeriod(all: StoredEvent[], q: RefQuery, interval: RefInterval = "day") {
  const tz = q.timezone ?? "UTC";
  const dayOfMs = (ms: number) => refBucket(ms, tz, interval).date;
  const buckets = refBuckets(q, interval);
  const days = buckets.map((b) => b.date);
  const inWin = refMatch(all, q);
  const near = refMatch(all, q, q.from - DAYMS, q.to + DAYMS);
  const series = buckets.map((b) => ({ date: b.date, day: b.day, events: 0, sessions: 0, users: 0, pageviews: 0 }));
  const idx = new Map(days.map((d, i) => [d, i]));
  for (const e of inWin) {
    const p = series[idx.get(dayOfMs(e.ts))!]!;
    p.events++;
    if (e.name === "pageview") p.pageviews++;
  }
  for (const [d, es] of groupBy(inWin, (e) => dayOfMs(e.ts))) series[idx.get(d)!]!.users = new Set(es.map((e) => e.visitor)).size;
  const durations: number[] = [];
  let bounces = 0;
  let sessions = 0;
  for (const es of groupBy(near, (e) => e.session).values()) {
    const first = Math.min(...es.map((e) => e.ts));
    if (first < q.from || first >= q.to) continue;
    sessions++;
    series[idx.get(dayOfMs(first))!]!.sessions++;
    const last = Math.max(...es.map((e) => e.ts));
    durations.push(refDuration(last - first));
    if (es.length <= 1 && es.filter((e) => e.name === "pageview").length <= 1) bounces++;
  }
  const events = inWin.length;
  return {
    series,
    totals: {
      events,
      pageviews: inWin.filter((e) => e.name === "pageview").length,
      sessions,
      // Hourly points: a person counts once per local day in the totals, as with days.
      users:
        interval === "hour"
          ? [...groupBy(inWin, (e) => refBucket(e.ts, tz, "day").date).values()].reduce(
              (a, es) => a + new Set(es.map((e) => e.visitor)).size,
              0,
            )
          : series.reduce((a, p) => a + p.users, 0),
      bounce_rate: q.kind === "web" ? r4(bounces, sessions) : 0,
      events_per_session: r4(events, sessions),
      median_session_seconds: refMedian(durations),
    },
  };
}

/** GET /apps/{id}/sessions: sessions starting in the window (with events up to a day either side). */
export function refSessions(all: StoredEvent[], q: RefQuery, limit: number) {
  const near = refMatch(all, q, q.from - DAYMS, q.to + DAYMS);
  const rows: { id: number; first: number; last: number; events: number; bounce: boolean }[] = [];
  for (const [id, es] of groupBy(near, (e) => e.session)) {
    const first = Math.min(...es.map((e) => e.ts));
    if (first < q.from || first >= q.to) continue;
    const pageviews = es.filter((e) => e.name === "pageview").length;
    rows.push({ id, first, last: Math.max(...es.map((e) => e.ts)), events: es.length, bounce: es.length <= 1 && pageviews <= 1 });
  }
  rows.sort((a, b) => b.first - a.first || b.id - a.id);
  const events = rows.reduce((a, r) => a + r.events, 0);
  return {
    ids: rows.slice(0, limit).map((r) => `${Math.floor(r.first / 1000).toString(36)}-${r.id.toString(16)}`),
    summary: {
      sessions: rows.length,
      bounce_rate: q.kind === "web" ? r4(rows.filter((r) => r.bounce).length, rows.length) : 0,
      events_per_session: r4(events, rows.length),
      median_seconds: refMedian(rows.map((r) => refDuration(r.last - r.first))),
    },
  };
}

export function refBreakdown(all: StoredEvent[], q: RefQuery, dim: string, metric: "events" | "sessions" | "users", limit: number) {
  const evs = refMatch(all, q);
  let valueFor = (e: StoredEvent) => dimValue(e, dim);
  if (dim === "entry" || dim === "exit") {
    const by = groupBy(evs, (e) => e.session);
    const place = new Map([...by].map(([s, es]) => [s, refSessionPlace(es, dim)]));
    valueFor = (e) => place.get(e.session);
  }
  const m = new Map<string, StoredEvent[]>();
  for (const e of evs) {
    const v = valueFor(e);
    if (v === undefined) continue;
    (m.get(v) ?? m.set(v, []).get(v)!).push(e);
  }
  const rows = [...m].map(([value, es]) => ({
    value,
    count:
      metric === "events"
        ? es.length
        : metric === "sessions"
          ? new Set(es.map((e) => e.session)).size
          : new Set(es.map((e) => `${refDay(e.ts, q.timezone)}|${e.visitor}`)).size,
  }));
  rows.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return rows.slice(0, limit);
}

export function refEvents(all: StoredEvent[], q: RefQuery, limit: number) {
  const evs = refMatch(all, q);
  const days = refBuckets(q, "day").map((b) => b.date);
  const ndays = days.length;
  const rows = [...groupBy(evs, (e) => e.name)].map(([name, es]) => {
    const series = new Array(ndays).fill(0);
    for (const e of es) series[days.indexOf(refDay(e.ts, q.timezone))]++;
    return { name, events: es.length, users: new Set(es.map((e) => `${refDay(e.ts, q.timezone)}|${e.visitor}`)).size, series };
  });
  rows.sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
  return rows.slice(0, limit);
}

export function refFunnel(all: StoredEvent[], q: RefQuery, steps: string[], windowSeconds: number) {
  const w = windowSeconds * 1000;
  const evs = refMatch(all, withoutName(q), q.from, q.to + w).filter((e) => steps.includes(e.name));
  const counts = new Array(steps.length).fill(0);
  for (const es of groupBy(evs, (e) => e.session).values()) {
    es.sort((a, b) => a.ts - b.ts);
    const start = es.findIndex((e) => e.name === steps[0] && e.ts >= q.from && e.ts < q.to);
    if (start < 0) continue;
    const t0 = es[start]!.ts;
    let at = start;
    let reached = 1;
    for (let k = 1; k < steps.length; k++) {
      const j = es.findIndex((e, idx) => idx > at && e.ts - t0 <= w && e.name === steps[k]);
      if (j < 0 || es.slice(at + 1, j).some((e) => e.ts - t0 > w)) break;
      reached++;
      at = j;
    }
    for (let k = 0; k < reached; k++) counts[k]++;
  }
  return counts as number[];
}

export function refPaths(all: StoredEvent[], q: RefQuery, after: string) {
  const evs = refMatch(all, q, q.from, q.to + DAYMS);
  const next = new Map<string, number>();
  for (const es of groupBy(evs, (e) => e.session).values()) {
    es.sort((a, b) => a.ts - b.ts);
    for (let k = 0; k + 1 < es.length; k++) {
      const e = es[k]!;
      if (e.name !== after || e.ts < q.from || e.ts >= q.to) continue;
      const n = es[k + 1]!;
      const label = n.name === "pageview" ? `pageview ${n.dims.pathname}` : n.name;
      next.set(label, (next.get(label) ?? 0) + 1);
    }
  }
  return [...next]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1))
    .slice(0, 20);
}

export function refHeatmap(all: StoredEvent[], q: RefQuery) {
  const out: { weekday: number; hour: number; sessions: number }[] = [];
  for (let wd = 1; wd <= 7; wd++) for (let h = 0; h < 24; h++) out.push({ weekday: wd, hour: h, sessions: 0 });
  // A session counts once in each hour (of real time, local to the zone: an hour repeated
  // when the clocks go back is two) in which it had an event.
  const seen = new Set<string>();
  for (const e of refMatch(all, q)) {
    const l = refLocal(e.ts, q.timezone);
    const k = `${e.session}|${l.date}T${l.hour}${l.off}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out[(l.weekday - 1) * 24 + l.hour]!.sessions++;
  }
  return out;
}

/** Event detail's series of one event name by `interval` of the query's zone: the buckets with events, oldest first. */
export function refEventSeries(all: StoredEvent[], q: RefQuery, name: string, interval: RefInterval = "day") {
  const byDay = new Map<string, { day: string; events: number; sessions: Set<number>; users: Set<number> }>();
  for (const e of refMatch(all, withoutName(q)).filter((e) => e.name === name)) {
    const b = refBucket(e.ts, q.timezone ?? "UTC", interval);
    const p = byDay.get(b.date) ?? byDay.set(b.date, { day: b.day, events: 0, sessions: new Set(), users: new Set() }).get(b.date)!;
    p.events++;
    p.sessions.add(e.session);
    p.users.add(e.visitor);
  }
  // In time order: the buckets' labels sort as text, except repeated hours (their offsets).
  const order = new Map(refBuckets(q, interval).map((b, i) => [b.date, i]));
  return [...byDay]
    .sort(([x], [y]) => order.get(x)! - order.get(y)!)
    .map(([date, p]) => ({ date, day: p.day, events: p.events, sessions: p.sessions.size, users: p.users.size }));
}
