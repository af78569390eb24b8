// Time zones and intervals, over HTTP, against the reference (tests/helpers/reference.ts,
// which reads zones from Intl directly): a US zone across both daylight-saving changes of
// 2026 (a 23-hour and a 25-hour day), India (+05:30) and Nepal (+05:45); every interval of
// the overview (unfiltered and filtered) and of event detail, the heatmap, a breakdown by
// users, the events list and the sessions summary. Half the events in partitions, half in
// the head.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { errorCode, startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { randomEvents } from "../helpers/events.ts";
import {
  refBreakdown,
  refEvents,
  refEventSeries,
  refHeatmap,
  refOverviewPeriod,
  refSessions,
  refWindow,
  type RefFilter,
  type RefInterval,
  type RefQuery,
} from "../helpers/reference.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { stateDirOf } from "../../src/durability/open.ts";

const clock = new TestClock(Date.UTC(2026, 10, 12, 12));
const ZONES = ["America/Los_Angeles", "Asia/Kolkata", "Asia/Kathmandu"] as const;
/** Windows (local dates) with the clocks changing inside them in Los Angeles. */
const FALL = { from: "2026-10-26", to: "2026-11-08" }; // back on 1 November: a 25-hour day
const SPRING = { from: "2026-03-02", to: "2026-03-15" }; // forward on 8 March: a 23-hour day
const FALL_WEEK = { from: "2026-10-29", to: "2026-11-04" };
const SPRING_WEEK = { from: "2026-03-05", to: "2026-03-11" };

let s: TestServer;
let owner: Record<string, string>;
const apps = new Map<string, { appId: number; events: StoredEvent[] }>();
let utcApp: { appId: number; events: StoredEvent[] };

beforeAll(async () => {
  s = await startTestServer({}, { clock });
  owner = await ownerHeaders(s);
  const first = await newApp(s, owner, "web", ["https://example.com"]);
  const orgId = first.orgId;
  const st = s.server.services.store;
  const made: StoredEvent[][] = [];
  let seed = 40;
  for (const tz of ZONES) {
    const a = await newApp(s, owner, "web", ["https://example.com"], orgId);
    const r = await s.api(`/apps/${a.appId}`, { method: "PATCH", json: { timezone: tz }, headers: owner });
    expect(r.status).toBe(200);
    // Events from a day before each window to a day after it: some fall outside in local time.
    const events = [
      ...randomEvents(a.appId, 2500, { seed: seed++, start: Date.UTC(2026, 9, 25), spanMs: 16 * 86_400_000, web: true }),
      ...randomEvents(a.appId, 2500, { seed: seed++, start: Date.UTC(2026, 2, 1), spanMs: 16 * 86_400_000, web: true }),
    ].sort((x, y) => x.ts - y.ts);
    apps.set(tz, { appId: a.appId, events });
    made.push(events);
  }
  utcApp = {
    appId: first.appId,
    events: randomEvents(first.appId, 3000, { seed: 50, start: Date.UTC(2026, 9, 13), spanMs: 30 * 86_400_000, web: true }),
  };
  made.push(utcApp.events);
  // Half in partitions, half in the head: queries must read both.
  for (const evs of made) st.append(evs.filter((_, i) => i % 2 === 0));
  const sv = s.server.services;
  const { checkpoint } = await import("../../src/durability/checkpoint.ts");
  await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
  for (const evs of made) st.append(evs.filter((_, i) => i % 2 === 1));
});
afterAll(() => s.stop());

const q = (tz: string, w: { from: string; to: string }, filters: RefFilter[] = []): RefQuery => ({
  ...refWindow(w.from, w.to, tz),
  debug: false,
  filters,
  kind: "web",
  timezone: tz,
});
const qs = (w: { from: string; to: string }, filters: RefFilter[], extra: Record<string, string> = {}) => {
  const p = new URLSearchParams({ from: w.from, to: w.to, ...extra });
  for (const [d, vs] of filters) for (const v of vs) p.append("filter", `${d}:${v}`);
  return p.toString();
};
const get = async <T>(path: string) => {
  const r = await s.api(path, { headers: owner });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};

interface Overview {
  current: { from: string; to: string; timezone: string; series: unknown[]; totals: unknown };
  previous: { from: string; to: string; timezone: string } | null;
  interval: string;
  source: string;
}

/** The source an unfiltered overview must have: the rollups when the store keeps them in the app's zone. */
function rollupSource(appId: number, tz: string, interval: string): string {
  const st = s.server.services.store as unknown as { rollupZone?: (app: number) => string | null };
  const zoneOfRollups = st.rollupZone ? st.rollupZone(appId) : "UTC";
  return interval !== "hour" && zoneOfRollups === tz ? "daily_totals" : "events";
}

describe("time zones and intervals against the reference", () => {
  test("the reference's own windows: 23- and 25-hour days in Los Angeles, +05:30 and +05:45", () => {
    const la = "America/Los_Angeles";
    expect(refWindow("2026-03-08", "2026-03-08", la)).toEqual({ from: Date.UTC(2026, 2, 8, 8), to: Date.UTC(2026, 2, 9, 7) });
    expect(refWindow("2026-11-01", "2026-11-01", la)).toEqual({ from: Date.UTC(2026, 10, 1, 7), to: Date.UTC(2026, 10, 2, 8) });
    expect(refWindow("2026-11-01", "2026-11-01", "Asia/Kolkata").from).toBe(Date.UTC(2026, 9, 31, 18, 30));
    expect(refWindow("2026-11-01", "2026-11-01", "Asia/Kathmandu").from).toBe(Date.UTC(2026, 9, 31, 18, 15));
  });

  const FILTERS: RefFilter[][] = [[], [["country", ["GB", "US"]]], [["browser", ["Chrome"]]]];
  for (const tz of ZONES) {
    test(`overview, every interval, unfiltered and filtered: ${tz}`, async () => {
      const { appId, events } = apps.get(tz)!;
      // A store that keeps day totals per zone has this app's in its zone (set before any
      // event came): the unfiltered overviews below read them, weeks and months merged.
      const st = s.server.services.store as unknown as { rollupZone?: (app: number) => string | null };
      if (st.rollupZone) expect(st.rollupZone(appId)).toBe(tz);
      const cases: [{ from: string; to: string }, RefInterval][] = [
        [FALL, "day"],
        [FALL, "week"],
        [FALL, "month"],
        [SPRING, "day"],
        [SPRING, "week"],
        [SPRING, "month"],
        [FALL_WEEK, "hour"],
        [SPRING_WEEK, "hour"],
      ];
      for (const [w, interval] of cases) {
        for (const filters of FILTERS) {
          const o = await get<Overview>(`/apps/${appId}/overview?${qs(w, filters, { interval, compare: "previous" })}`);
          const want = refOverviewPeriod(events, q(tz, w, filters), interval);
          expect({ tz, interval, filters, series: o.current.series, totals: o.current.totals }).toEqual({
            tz,
            interval,
            filters,
            series: want.series,
            totals: want.totals,
          });
          expect(o.current).toMatchObject({ from: w.from, to: w.to, timezone: tz });
          expect(o.interval).toBe(interval);
          expect(o.source).toBe(filters.length ? "events" : rollupSource(appId, tz, interval));
          expect(o.previous?.timezone).toBe(tz);
        }
      }
    });

    test(`event detail, every interval; heatmap; breakdown by users; events list; sessions: ${tz}`, async () => {
      const { appId, events } = apps.get(tz)!;
      for (const [w, intervals] of [
        [FALL, ["day", "week", "month"]],
        [FALL_WEEK, ["hour", "day"]],
        [SPRING_WEEK, ["hour", "week"]],
      ] as const) {
        for (const interval of intervals) {
          const d = await get<{ interval: string; timezone: string; series: { events: number }[] }>(
            `/apps/${appId}/events/pageview?${qs(w, [], { interval })}`,
          );
          expect({ interval, w, series: d.series.filter((p) => p.events > 0) }).toEqual({
            interval,
            w,
            series: refEventSeries(events, q(tz, w), "pageview", interval),
          });
          expect({ interval: d.interval, timezone: d.timezone }).toEqual({ interval, timezone: tz });
        }
      }
      for (const w of [FALL, SPRING_WEEK]) {
        const h = await get<{ cells: unknown }>(`/apps/${appId}/heatmap?${qs(w, [])}`);
        expect(h.cells).toEqual(refHeatmap(events, q(tz, w)));
        const b = await get<{ rows: unknown }>(
          `/apps/${appId}/breakdown?${qs(w, [], { dimension: "country", metric: "users", limit: "100" })}`,
        );
        expect(b.rows).toEqual(refBreakdown(events, q(tz, w), "country", "users", 100));
        const l = await get<{ events: unknown }>(`/apps/${appId}/events?${qs(w, [], { limit: "100" })}`);
        expect(l.events).toEqual(refEvents(events, q(tz, w), 100));
        const ss = await get<{ sessions: { id: string }[]; summary: unknown }>(`/apps/${appId}/sessions?${qs(w, [], { limit: "20" })}`);
        const want = refSessions(events, q(tz, w), 20);
        expect(ss.summary).toEqual(want.summary);
        expect(ss.sessions.map((x) => x.id)).toEqual(want.ids);
      }
    });
  }

  test("the hour points of the nights the clocks change in Los Angeles: one missing, one repeated", async () => {
    const { appId } = apps.get("America/Los_Angeles")!;
    type P = { date: string; day: string };
    const spring = await get<Overview>(`/apps/${appId}/overview?${qs({ from: "2026-03-08", to: "2026-03-08" }, [], { interval: "hour" })}`);
    const sp = spring.current.series as P[];
    expect(sp.length).toBe(23);
    expect(sp.slice(1, 3).map((p) => p.date)).toEqual(["2026-03-08T01:00-08:00", "2026-03-08T03:00-07:00"]);
    const fall = await get<Overview>(`/apps/${appId}/overview?${qs({ from: "2026-11-01", to: "2026-11-01" }, [], { interval: "hour" })}`);
    const fp = fall.current.series as P[];
    expect(fp.length).toBe(25);
    expect(fp.slice(1, 4).map((p) => p.date)).toEqual(["2026-11-01T01:00-07:00", "2026-11-01T01:00-08:00", "2026-11-01T02:00-08:00"]);
    expect(fp.every((p) => p.day === "2026-11-01")).toBe(true);
  });

  test("a UTC app: the unfiltered overview by day, week and month comes from the rollups, by hour from the events; the same numbers", async () => {
    const { appId, events } = utcApp;
    const w = { from: "2026-10-14", to: "2026-11-12" };
    for (const interval of ["day", "week", "month"] as const) {
      const o = await get<Overview>(`/apps/${appId}/overview?${qs(w, [], { interval })}`);
      expect(o.source).toBe("daily_totals");
      const want = refOverviewPeriod(events, q("UTC", w), interval);
      expect({ interval, series: o.current.series, totals: o.current.totals }).toEqual({
        interval,
        series: want.series,
        totals: want.totals,
      });
      expect(o.current.timezone).toBe("UTC");
    }
    const hw = { from: "2026-10-30", to: "2026-11-05" };
    const h = await get<Overview>(`/apps/${appId}/overview?${qs(hw, [], { interval: "hour" })}`);
    expect(h.source).toBe("events");
    expect(h.current.series.length).toBe(7 * 24);
    expect(h.current.series).toEqual(refOverviewPeriod(events, q("UTC", hw), "hour").series);
  });

  test("interval hour is for windows of at most 7 days; an unknown interval is a 400", async () => {
    const { appId } = apps.get("Asia/Kolkata")!;
    const long = await s.api(`/apps/${appId}/overview?${qs({ from: "2026-10-26", to: "2026-11-02" }, [], { interval: "hour" })}`, {
      headers: owner,
    });
    expect(long.status).toBe(400);
    expect(await errorCode(long)).toBe("invalid_interval");
    const detail = await s.api(`/apps/${appId}/events/pageview?${qs(FALL, [], { interval: "hour" })}`, { headers: owner });
    expect(detail.status).toBe(400);
    expect(await errorCode(detail)).toBe("invalid_interval");
    const odd = await s.api(`/apps/${appId}/overview?${qs(FALL, [], { interval: "year" })}`, { headers: owner });
    expect(odd.status).toBe(400);
  });
});
