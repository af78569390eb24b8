// The reference: plain loops over plain event objects, written for clarity, against
// which the store's rollups and the query operators are compared.

import type { StoredEvent } from "../../src/store/event.ts";

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

/** Daily totals for one app and debug flag: events by their day, sessions by their first event's day. */
export function refDaily(events: StoredEvent[], debug: boolean): Map<string, RefDay> {
  const out = new Map<string, RefDay>();
  const get = (d: string) => out.get(d) ?? out.set(d, { events: 0, pageviews: 0, users: 0, sessions: 0, bounces: 0, durations: [] }).get(d)!;
  const visitors = new Map<string, Set<number>>();
  const sessions = new Map<number, StoredEvent[]>();
  for (const e of events) {
    if (e.debug !== debug) continue;
    const d = get(day(e.ts));
    d.events++;
    if (e.name === "pageview") d.pageviews++;
    (visitors.get(day(e.ts)) ?? visitors.set(day(e.ts), new Set()).get(day(e.ts))!).add(e.visitor);
    (sessions.get(e.session) ?? sessions.set(e.session, []).get(e.session)!).push(e);
  }
  for (const [d, v] of visitors) get(d).users = v.size;
  for (const evs of sessions.values()) {
    const first = Math.min(...evs.map((e) => e.ts));
    const last = Math.max(...evs.map((e) => e.ts));
    const d = get(day(first));
    d.sessions++;
    const pv = evs.filter((e) => e.name === "pageview").length;
    if (evs.length <= 1 && pv <= 1) d.bounces++;
    d.durations.push(refDuration(last - first));
  }
  return out;
}
