// Every stats endpoint, over HTTP, against the reference (tests/helpers/reference.ts) on
// random event sets: sessions across midnight, debug and production mixed, several apps in
// one store (no answer may include another app's events), filters that match nothing,
// empty windows.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, TestClock, type TestServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/tmp.ts";
import { newApp, ownerHeaders } from "../helpers/ingest.ts";
import { randomEvents } from "../helpers/events.ts";
import {
  refBreakdown,
  refEvents,
  refEventSeries,
  refFunnel,
  refHeatmap,
  refMatch,
  refOverviewPeriod,
  refPaths,
  refSessions,
  type RefQuery,
} from "../helpers/reference.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { stateDirOf } from "../../src/durability/open.ts";

const START = Date.UTC(2026, 10, 10, 20); // 20:00, so sessions cross midnight
const clock = new TestClock(Date.UTC(2026, 10, 16, 12));
let s: TestServer;
let owner: Record<string, string>;
let web: { appId: number; orgId: number };
let app: { appId: number; orgId: number };
let webEvents: StoredEvent[];
let appEvents: StoredEvent[];

beforeAll(async () => {
  s = await startTestServer({}, { clock });
  owner = await ownerHeaders(s);
  web = await newApp(s, owner, "web", ["https://example.com"]);
  app = await newApp(s, owner, "app", undefined, web.orgId);
  const other = await newApp(s, owner, "web", ["https://example.com"], web.orgId);
  webEvents = randomEvents(web.appId, 6000, { seed: 21, start: START, spanMs: 5 * 86_400_000, web: true });
  appEvents = randomEvents(app.appId, 4000, { seed: 22, start: START, spanMs: 5 * 86_400_000 });
  const noise = randomEvents(other.appId, 3000, { seed: 23, start: START, spanMs: 5 * 86_400_000, web: true });
  const st = s.server.services.store;
  // Half in partitions, half in the head: queries must read both.
  st.append(webEvents.slice(0, 3000));
  st.append(appEvents.slice(0, 2000));
  st.append(noise);
  const sv = s.server.services;
  const { checkpoint } = await import("../../src/durability/checkpoint.ts");
  await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
  st.append(webEvents.slice(3000));
  st.append(appEvents.slice(2000));
});
afterAll(() => s.stop());

const FROM = "2026-11-10";
const TO = "2026-11-16";
const q = (kind: "app" | "web", filters: [string, string[]][] = [], debug = false, from = FROM, to = TO): RefQuery => ({
  from: Date.parse(`${from}T00:00:00Z`),
  to: Date.parse(`${to}T00:00:00Z`) + 86_400_000,
  debug,
  filters,
  kind,
});
const qs = (filters: [string, string[]][], extra: Record<string, string> = {}) => {
  const p = new URLSearchParams({ from: FROM, to: TO, ...extra });
  for (const [d, vs] of filters) for (const v of vs) p.append("filter", `${d}:${v}`);
  return p.toString();
};
const get = async <T>(path: string) => {
  const r = await s.api(path, { headers: owner });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};

const FILTER_SETS: [string, string[]][][] = [
  [],
  [["country", ["GB"]]],
  [
    ["country", ["GB", "US"]],
    ["browser", ["Chrome"]],
  ],
  [["pathname", ["/pricing"]]],
  [["name", ["signup", "purchase"]]],
  [["prop:plan", ["pro"]]],
  [["entry", ["/"]]],
  [["country", ["XX-nothing"]]],
];

describe("stats against the reference", () => {
  test("overview: unfiltered from rollups and filtered from events, with compare", async () => {
    for (const filters of FILTER_SETS) {
      for (const debug of [false, true]) {
        const o = await get<{
          current: { series: unknown; totals: unknown; timezone: string };
          previous: unknown;
          source: string;
          interval: string;
        }>(`/apps/${web.appId}/overview?${qs(filters, { debug: String(debug), compare: "previous" })}`);
        const want = refOverviewPeriod(webEvents, q("web", filters, debug));
        expect({ filters, debug, series: o.current.series, totals: o.current.totals }).toEqual({
          filters,
          debug,
          series: want.series,
          totals: want.totals,
        });
        expect(o.source).toBe(filters.length ? "events" : "daily_totals");
        expect(o.previous).not.toBeNull();
        // An app never given a zone counts UTC days, by day unless asked otherwise.
        expect({ interval: o.interval, timezone: o.current.timezone }).toEqual({ interval: "day", timezone: "UTC" });
      }
    }
    const a = await get<{ current: { totals: { bounce_rate: number; events: number } } }>(`/apps/${app.appId}/overview?${qs([])}`);
    expect(a.current.totals).toEqual(refOverviewPeriod(appEvents, q("app")).totals);
    expect(a.current.totals.bounce_rate).toBe(0);
  });

  test("breakdown by context, event and session dimensions and properties, each metric", async () => {
    for (const dim of ["country", "browser", "name", "pathname", "referrer_source", "entry", "exit", "prop:plan", "prop:value"]) {
      for (const metric of ["events", "sessions", "users"] as const) {
        for (const filters of [FILTER_SETS[0]!, FILTER_SETS[1]!, FILTER_SETS[5]!]) {
          const b = await get<{ rows: unknown }>(`/apps/${web.appId}/breakdown?${qs(filters, { dimension: dim, metric, limit: "1000" })}`);
          expect({ dim, metric, filters, rows: b.rows }).toEqual({
            dim,
            metric,
            filters,
            rows: refBreakdown(webEvents, q("web", filters), dim, metric, 1000),
          });
        }
      }
    }
    // Sessions and users of a dimension held per context are counted per context (a chunk
    // within one day), else per row: every filter kind, and a window that starts inside
    // the data as well, so the head's sessions are cut at its edge.
    for (const dim of ["country", "referrer_source", "utm_source"]) {
      for (const metric of ["sessions", "users"] as const) {
        for (const filters of FILTER_SETS) {
          for (const from of [FROM, "2026-11-12"]) {
            const b = await get<{ rows: unknown }>(
              `/apps/${web.appId}/breakdown?${qs(filters, { dimension: dim, metric, limit: "1000", from })}`,
            );
            const want = refBreakdown(webEvents, q("web", filters, false, from), dim, metric, 1000);
            expect({ dim, metric, filters, from, rows: b.rows }).toEqual({ dim, metric, filters, from, rows: want });
          }
        }
      }
    }
    const top = await get<{ rows: unknown[] }>(`/apps/${web.appId}/breakdown?${qs([], { dimension: "pathname" })}`);
    expect(top.rows.length).toBe(Math.min(10, refBreakdown(webEvents, q("web"), "pathname", "events", 1000).length));
  });

  test("events list with series, and event detail", async () => {
    for (const filters of FILTER_SETS.slice(0, 4)) {
      const e = await get<{ events: unknown }>(`/apps/${app.appId}/events?${qs(filters)}`);
      expect({ filters, events: e.events }).toEqual({ filters, events: refEvents(appEvents, q("app", filters), 50) });
    }
    const d = await get<{
      series: { events: number; sessions: number; users: number }[];
      number_properties: { key: string; count: number; sum: number }[];
      string_properties: { key: string; values: { value: string; count: number }[] }[];
      property_by: { value: string; count: number }[];
    }>(`/apps/${app.appId}/events/purchase?${qs([], { property: "value", by: "country" })}`);
    const evs = refMatch(appEvents, q("app")).filter((e) => e.name === "purchase");
    expect(d.series.reduce((a, p) => a + p.events, 0)).toBe(evs.length);
    const vals = evs.filter((e) => e.np.value !== undefined).map((e) => e.np.value!);
    expect(d.number_properties).toEqual([expect.objectContaining({ key: "value", count: vals.length })]);
    expect(d.number_properties[0]!.sum).toBeCloseTo(
      vals.reduce((a, b) => a + b, 0),
      6,
    );
    expect(d.property_by.reduce((a, g) => a + g.count, 0)).toBe(vals.length);
    // The daily series, point by point: pageviews of the web site have sessions that cross midnight.
    for (const [a, list, name, kind] of [
      [app, appEvents, "purchase", "app"],
      [web, webEvents, "pageview", "web"],
    ] as const) {
      const got = await get<{ series: { day: string; events: number; sessions: number; users: number }[] }>(
        `/apps/${a.appId}/events/${name}?${qs([])}`,
      );
      expect(got.series.filter((p) => p.events > 0)).toEqual(refEventSeries(list, q(kind), name));
    }
    const all = await get<{ string_properties: { key: string; values: { value: string; count: number }[] }[] }>(
      `/apps/${app.appId}/events/purchase?${qs([])}`,
    );
    const plans = new Map<string, number>();
    for (const e of evs) if (e.sp.plan) plans.set(e.sp.plan, (plans.get(e.sp.plan) ?? 0) + 1);
    // Only keys this event has values for (other events' keys are not listed, empty).
    expect(all.string_properties.filter((p) => p.values.length === 0)).toEqual([]);
    expect(all.string_properties.find((p) => p.key === "plan")?.values).toEqual(
      [...plans].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1)),
    );
  });

  test("funnel, with and without breakdown", async () => {
    for (const [steps, w] of [
      [["pageview", "signup"], 86400],
      [["pageview", "signup", "purchase"], 3600],
      [["pageview", "pageview", "purchase"], 600],
    ] as [string[], number][]) {
      const f = await s.api(`/apps/${web.appId}/funnel?${qs([])}`, { method: "POST", json: { steps, window_seconds: w }, headers: owner });
      const body = (await f.json()) as { groups: { group: string; steps: { sessions: number; conversion: number }[] }[] };
      expect({ steps, sessions: body.groups[0]!.steps.map((x) => x.sessions) }).toEqual({
        steps,
        sessions: refFunnel(webEvents, q("web"), steps, w),
      });
      const g = await s.api(`/apps/${web.appId}/funnel?${qs([])}`, {
        method: "POST",
        json: { steps, window_seconds: w, breakdown: "country" },
        headers: owner,
      });
      const gb = (await g.json()) as { groups: { group: string; steps: { sessions: number }[] }[]; more_groups: boolean };
      expect(gb.groups.reduce((a, x) => a + x.steps[0]!.sessions, 0)).toBe(body.groups[0]!.steps[0]!.sessions);
      expect(gb.more_groups).toBe(false);
    }
  });

  test("paths and heatmap", async () => {
    for (const after of ["pageview", "signup"]) {
      const p = await s.api(`/apps/${web.appId}/paths?${qs([])}`, { method: "POST", json: { after }, headers: owner });
      expect(((await p.json()) as { next: unknown }).next).toEqual(refPaths(webEvents, q("web"), after));
    }
    for (const filters of [FILTER_SETS[0]!, FILTER_SETS[2]!]) {
      const h = await get<{ cells: unknown }>(`/apps/${web.appId}/heatmap?${qs(filters)}`);
      expect(h.cells).toEqual(refHeatmap(webEvents, q("web", filters)));
    }
  });

  test("heatmap and breakdowns by sessions and users over hourly partitions alone, then compacted days, then with a head again", async () => {
    const w = await newApp(s, owner, "web", ["https://example.com"], web.orgId);
    const evs = randomEvents(w.appId, 6000, { seed: 51, start: START, spanMs: 5 * 86_400_000, web: true });
    // Sessions that change a context dimension midway: several contexts per session.
    evs.forEach((e, i) => {
      if (i % 3 === 0) e.dims = { ...e.dims, utm_content: `v${i % 2}` };
    });
    const sv = s.server.services;
    const { checkpoint } = await import("../../src/durability/checkpoint.ts");
    sv.store.append(evs.slice(0, 5000));
    await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
    const check = async () => {
      clock.advance(31_000); // past the answer cache
      for (const filters of [FILTER_SETS[0]!, FILTER_SETS[2]!]) {
        const h = await get<{ cells: unknown }>(`/apps/${w.appId}/heatmap?${qs(filters)}`);
        expect(h.cells).toEqual(refHeatmap(evs.slice(0, n), q("web", filters)));
        // Event detail's daily series: days held by one sorted chunk count sessions without a set.
        const got = await get<{ series: { day: string; events: number; sessions: number; users: number }[] }>(
          `/apps/${w.appId}/events/pageview?${qs(filters)}`,
        );
        expect(got.series.filter((p) => p.events > 0)).toEqual(refEventSeries(evs.slice(0, n), q("web", filters), "pageview"));
        // Partitions that share no day with another are counted each on its own (breakdown.ts).
        for (const dim of ["pathname", "country"]) {
          for (const metric of ["sessions", "users"] as const) {
            const b = await get<{ rows: unknown }>(`/apps/${w.appId}/breakdown?${qs(filters, { dimension: dim, metric, limit: "1000" })}`);
            expect({ dim, metric, rows: b.rows }).toEqual({
              dim,
              metric,
              rows: refBreakdown(evs.slice(0, n), q("web", filters), dim, metric, 1000),
            });
          }
        }
      }
    };
    let n = 5000;
    await check();
    await sv.store.compactBefore(TO);
    expect(sv.store.plan(w.appId, -Infinity, Infinity).partitions.every((p) => p.hour === null || p.date >= TO)).toBe(true);
    await check();
    // Sessions continue in the head, in hours the day files also hold.
    sv.store.append(evs.slice(5000));
    n = 6000;
    await check();
  });

  test("sessions and a session's timeline", async () => {
    const r = await get<{ sessions: { id: string; events: number; started: string }[]; summary: { sessions: number } }>(
      `/apps/${web.appId}/sessions?${qs([], { limit: "500" })}`,
    );
    const ref = refOverviewPeriod(webEvents, q("web"));
    expect(r.summary.sessions).toBe(ref.totals.sessions);
    expect(r.sessions.length).toBe(Math.min(500, ref.totals.sessions));
    expect([...r.sessions].sort((a, b) => b.started.localeCompare(a.started))).toEqual(r.sessions);
    // The newest sessions and the summary, against the reference; a small limit as well,
    // so the operator's buffer of newest sessions is cut back many times.
    for (const [site, events, kind] of [
      [web, webEvents, "web"],
      [app, appEvents, "app"],
    ] as const) {
      for (const limit of [7, 500]) {
        const got = await get<{ sessions: { id: string }[]; summary: Record<string, number> }>(
          `/apps/${site.appId}/sessions?${qs([], { limit: String(limit) })}`,
        );
        const want = refSessions(events, q(kind), limit);
        expect({ ids: got.sessions.map((x) => x.id), summary: got.summary }).toEqual(want);
      }
    }
    const one = r.sessions[3]!;
    const tl = await get<{ name: string; ts: string }[]>(`/apps/${web.appId}/sessions/${one.id}`);
    expect(tl.length).toBe(one.events);
    expect(tl[0]!.ts).toBe(one.started);
    const bad = await s.api(`/apps/${web.appId}/sessions?${qs([["pathname", ["/"]]])}`, { headers: owner });
    expect(bad.status).toBe(400);
  });

  test("empty windows, unknown parameters and dimensions, other apps' data", async () => {
    const empty = await get<{ current: { totals: { events: number }; series: unknown[] } }>(
      `/apps/${web.appId}/overview?from=2025-01-01&to=2025-01-03`,
    );
    expect(empty.current.totals.events).toBe(0);
    expect(empty.current.series.length).toBe(3);
    expect((await s.api(`/apps/${web.appId}/overview?bogus=1`, { headers: owner })).status).toBe(400);
    const unk = await s.api(`/apps/${web.appId}/breakdown?dimension=shoe_size`, { headers: owner });
    expect(unk.status).toBe(400);
    expect((await s.api(`/apps/${web.appId}/overview?filter=shoe:1`, { headers: owner })).status).toBe(400);
    expect((await s.api(`/apps/${web.appId}/overview?from=2026-11-10&to=2026-11-01`, { headers: owner })).status).toBe(400);
    expect((await s.api(`/apps/${web.appId}/overview?from=2024-01-01&to=2026-01-01`, { headers: owner })).status).toBe(400);
    const live = await get<{ events: number; minutes: number }>(`/apps/${web.appId}/live`);
    expect(live.minutes).toBe(5);
  });
});

describe("live against the reference", () => {
  const refLive = (evs: StoredEvent[], now: number, debug: boolean) => {
    // The window is whole seconds (src/store/live.ts).
    const start = Math.floor((now - 5 * 60_000) / 1000) * 1000;
    const inWindow = evs.filter((e) => e.ts >= start && e.ts <= now && e.debug === debug);
    return { n: inWindow.length, want: { minutes: 5, events: inWindow.length, sessions: new Set(inWindow.map((e) => e.session)).size } };
  };
  const liveOf = (appId: number, debug: boolean) =>
    get<{ events: number; sessions: number; minutes: number }>(`/apps/${appId}/live${debug ? "?debug=true" : ""}`);

  test("events and distinct sessions of the last 5 minutes, from the live counts, a flush in between", async () => {
    const w = await newApp(s, owner, "web", ["https://example.com"], web.orgId);
    const st = s.server.services.store;
    const sv = s.server.services;
    const { checkpoint } = await import("../../src/durability/checkpoint.ts");
    // A new app: nothing of it was stored before this process, so it is counted from the start.
    let now = clock.now();
    // Nothing after the clock, as ingest clamps times (the generator's sessions run on).
    const before = randomEvents(w.appId, 8000, { seed: 31, start: now - 12 * 60_000, spanMs: 12 * 60_000, web: true }).filter(
      (e) => e.ts <= now,
    );
    st.append(before.slice(0, before.length >> 1));
    await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
    st.append(before.slice(before.length >> 1));
    expect(sv.store.live.read(w.appId, false, now)).not.toBeNull();
    for (const debug of [false, true]) {
      const r = refLive(before, now, debug);
      expect(r.n).toBeGreaterThan(debug ? 20 : 500);
      expect(await liveOf(w.appId, debug)).toEqual(r.want);
    }
    // Six minutes on, with events since (some sessions continuing).
    clock.advance(6 * 60_000);
    now = clock.now();
    const after = randomEvents(w.appId, 8000, { seed: 32, start: now - 7 * 60_000, spanMs: 7 * 60_000, web: true }).filter(
      (e) => e.ts <= now,
    );
    for (const e of after.slice(0, 300)) e.session = before[before.length - 1 - (e.session % 50)]!.session;
    const all = [...before, ...after];
    const half = after.length >> 1;
    st.append(after.slice(0, half));
    await checkpoint({ db: sv.db, log: sv.log, ingest: sv.ingest, store: sv.store, stateDir: stateDirOf(sv.config.dataDir) });
    st.append(after.slice(half));
    expect(sv.store.live.read(w.appId, false, now)).not.toBeNull();
    for (const debug of [false, true]) {
      const r = refLive(all, now, debug);
      expect(r.n).toBeGreaterThan(debug ? 20 : 500);
      expect(await liveOf(w.appId, debug)).toEqual(r.want);
    }
  });

  test("after a restart: scanned while the window reaches into what was stored before, then counted", async () => {
    const c2 = new TestClock(Date.UTC(2026, 10, 16, 12, 30));
    const dir = tempDir("sextant-live-");
    let t = await startTestServer({ dataDir: dir }, { clock: c2 });
    const o = await ownerHeaders(t);
    const w = await newApp(t, o, "web", ["https://example.com"]);
    const live = async (debug: boolean) => {
      const r = await t.api(`/apps/${w.appId}/live${debug ? "?debug=true" : ""}`, { headers: o });
      expect(r.status).toBe(200);
      return r.json();
    };
    const evs = randomEvents(w.appId, 8000, { seed: 41, start: c2.now() - 10 * 60_000, spanMs: 10 * 60_000, web: true }).filter(
      (e) => e.ts <= c2.now(),
    );
    t.server.services.store.append(evs);
    for (const debug of [false, true]) expect(await live(debug)).toEqual(refLive(evs, c2.now(), debug).want);
    // The final checkpoint puts them in the 12:00 partition; after the restart they are not counted.
    await t.stop();
    t = await startTestServer({ dataDir: dir }, { clock: c2 });
    try {
      expect(t.server.services.store.live.read(w.appId, false, c2.now())).toBeNull();
      for (const debug of [false, true]) {
        const r = refLive(evs, c2.now(), debug);
        expect(r.n).toBeGreaterThan(debug ? 20 : 500);
        expect(await live(debug)).toEqual(r.want);
      }
      // 13:06: the window starts after the partition's hour; new events are counted.
      c2.advance(36 * 60_000);
      const more = randomEvents(w.appId, 8000, { seed: 42, start: c2.now() - 8 * 60_000, spanMs: 8 * 60_000, web: true }).filter(
        (e) => e.ts <= c2.now(),
      );
      t.server.services.store.append(more);
      expect(t.server.services.store.live.read(w.appId, false, c2.now())).not.toBeNull();
      for (const debug of [false, true]) {
        const r = refLive([...evs, ...more], c2.now(), debug);
        expect(r.n).toBeGreaterThan(debug ? 20 : 500);
        expect(await live(debug)).toEqual(r.want);
      }
    } finally {
      await t.stop();
    }
  });
});

describe("cache, budget and load", () => {
  test("answers are cached 30 seconds; live never", async () => {
    const path = `/apps/${web.appId}/overview?${qs([["country", ["GB"]]])}`;
    const a = await get<{ current: { totals: { events: number } } }>(path);
    const gb = { ...webEvents[0]!, dims: { ...webEvents[0]!.dims, country: "GB" }, ts: Date.UTC(2026, 10, 12), debug: false };
    s.server.services.store.append([gb]);
    const b = await get<{ current: { totals: { events: number } } }>(path);
    expect(b.current.totals.events).toBe(a.current.totals.events);
    clock.advance(31_000);
    const c = await get<{ current: { totals: { events: number } } }>(path);
    expect(c.current.totals.events).toBe(a.current.totals.events + 1);
    webEvents.push(gb);
  });

  test("a query over its budget answers 422; too many waiting, 503", async () => {
    const t = await startTestServer({ queryBudgetMs: 1, queryQueue: 1 }, { clock });
    try {
      const o = await ownerHeaders(t);
      const w = await newApp(t, o, "web", ["https://example.com"]);
      t.server.services.store.append(randomEvents(w.appId, 40_000, { seed: 5, start: START, spanMs: 5 * 86_400_000, web: true }));
      const heavy = await t.api(`/apps/${w.appId}/breakdown?${qs([], { dimension: "entry", metric: "users" })}`, { headers: o });
      expect(heavy.status).toBe(422);
      expect(((await heavy.json()) as { error: { code: string } }).error.code).toBe("query_too_heavy");
    } finally {
      await t.stop();
    }
    const u = await startTestServer({ queryQueue: 1 }, { clock });
    try {
      const o = await ownerHeaders(u);
      const w = await newApp(u, o, "web", ["https://example.com"]);
      u.server.services.store.append(randomEvents(w.appId, 40_000, { seed: 6, start: START, spanMs: 5 * 86_400_000, web: true }));
      const many = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          u.api(`/apps/${w.appId}/breakdown?${qs([], { dimension: "entry", metric: "users", limit: String(100 + i) })}`, { headers: o }),
        ),
      );
      const busy = many.filter((r) => r.status === 503);
      expect(busy.length).toBeGreaterThan(0);
      expect(busy[0]!.headers.get("retry-after")).toBe("1");
      expect(many.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    } finally {
      await u.stop();
    }
  });
});
