// Breakdowns from the rollups (query/ops/breakdown-rollups.ts, store/breakdown-rollups.ts)
// against the scan (query/ops/breakdown.ts) on the same store: every kept dimension by
// events, sessions and users, in UTC and in zones off UTC, with sessions crossing local
// midnight and running over several days (values changing on the way), debug events,
// windows starting and ending on days such sessions cross, days built at query time, late
// events, compaction, a zone change and a store whose breakdowns are not built yet.

import { describe, expect, test } from "bun:test";
import { EventStore } from "../../src/store/store.ts";
import { createLogger } from "../../src/infra/log.ts";
import { QueryRunner } from "../../src/query/runner.ts";
import { EmbeddedStatsEngine } from "../../src/query/embedded-engine.ts";
import { ServerMetrics } from "../../src/infra/metrics.ts";
import { breakdown } from "../../src/query/ops/breakdown.ts";
import { breakdownFromRollups, TAIL_DAYS } from "../../src/query/ops/breakdown-rollups.ts";
import { buildBreakdownDays, encodeDimDay, ROLLED_DIMS } from "../../src/store/breakdown-rollups.ts";
import { complete } from "../../src/query/work.ts";
import { windowOfDays } from "../../src/query/window.ts";
import type { BreakdownMetric } from "../../src/query/stats-engine.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../src/util/time.ts";
import { zone } from "../../src/util/zone.ts";
import { randomEvents, rng } from "../helpers/events.ts";
import { tempDir } from "../helpers/tmp.ts";

const log = createLogger("silent");
const mk = () => new EventStore({ dir: tempDir("sextant-breakdown-rollups-"), log, cacheBytes: 64 << 20, flushEvents: 1e9 });
const flush = async (s: EventStore, tag: number) => {
  const heads = s.takeHeads();
  s.finishFlush(heads, await s.writeHeads(heads, tag));
};
const METRICS: BreakdownMetric[] = ["events", "sessions", "users"];
const START = Date.UTC(2026, 9, 29, 5); // over the end of US daylight time (1 November)
const DAYS = 6;

/**
 * Sessions that cross local midnight in `tz`: each starts 40 minutes before a local
 * midnight and goes on for up to 30 hours with gaps under two hours, changing page and
 * name (so a value can be on one day of a session and not the next, or on both).
 */
function crossing(app: number, tz: string, seed: number, debugShare = 0.2): StoredEvent[] {
  const z = zone(tz);
  const r = rng(seed);
  const base = randomEvents(app, 400, { seed, start: START, spanMs: DAYS * DAY_MS, web: true });
  const out: StoredEvent[] = [];
  const first = z.day(START);
  for (let k = 0; k < 60; k++) {
    const d = first + 1 + (k % (DAYS - 2));
    let t = z.dayStart(d) - 40 * MINUTE_MS + Math.floor(r() * 30 * MINUTE_MS);
    const session = Math.floor(r() * 2 ** 50) + 7;
    const visitor = Math.floor(r() * 50) + 1;
    const debug = r() < debugShare;
    const long = k % 5 === 0;
    const n = long ? 20 : 2 + Math.floor(r() * 6);
    for (let i = 0; i < n; i++) {
      const e = base[(k * 7 + i) % base.length]!;
      out.push({
        ...e,
        ts: t,
        session,
        visitor,
        debug,
        name: r() < 0.6 ? "pageview" : "tap",
        dims: { ...e.dims, pathname: ["/", "/a", "/b", "/c"][Math.floor(r() * 4)]! },
      });
      t += long ? Math.floor(r() * 2 * HOUR_MS) : Math.floor(r() * 25 * MINUTE_MS) + 1;
    }
  }
  return out;
}

function dataFor(app: number, tz: string, seed: number): StoredEvent[] {
  return [
    ...randomEvents(app, 4000, { seed, start: START, spanMs: DAYS * DAY_MS, web: true }),
    ...randomEvents(app, 1500, { seed: seed + 1, start: START, spanMs: DAYS * DAY_MS }),
    ...crossing(app, tz, seed + 2),
  ];
}

/** Half in partitions, half in the head; the clock well after the data (every day built). */
async function storeWith(app: number, tz: string, events: StoredEvent[]) {
  const s = mk();
  s.setZone(app, tz);
  const half = Math.floor(events.length / 2);
  s.append(events.slice(0, half));
  await flush(s, 1);
  s.append(events.slice(half));
  return s;
}

/** The rollup job: day totals, then the days' breakdowns due, built in a query thread as the server does. */
const build = async (s: EventStore, now: number) => {
  while (s.refreshRollups(now, 7) > 0);
  const engine = new EmbeddedStatsEngine({
    store: s,
    now: () => now,
    budgetMs: 60_000,
    maxWaiting: 10,
    metrics: new ServerMetrics(),
    threads: 1,
    log,
  });
  try {
    await engine.buildBreakdowns(now);
  } finally {
    engine.close();
  }
};

function contextOf(s: EventStore, app: number, tz: string, fromDay: number, toDay: number, debug: boolean, now: number) {
  const runner = new QueryRunner({ store: s, now: () => now, budgetMs: 60_000, maxWaiting: 10 });
  return runner.context(app, "web", windowOfDays(fromDay, toDay, tz), debug, [], { check() {} });
}

/** Every kept dimension and metric, both debug flags: the rollups' answer is the scan's. */
function compare(s: EventStore, app: number, tz: string, fromDay: number, toDay: number, now: number, dims = ROLLED_DIMS) {
  let answered = 0;
  for (const debug of [false, true]) {
    const q = contextOf(s, app, tz, fromDay, toDay, debug, now);
    for (const dim of dims) {
      for (const metric of METRICS) {
        const scan = complete(breakdown(q, dim, metric, 1000));
        const roll = breakdownFromRollups(q, dim, metric, 1000);
        expect(roll, `${dim} by ${metric}, debug ${debug}`).not.toBeNull();
        expect({ dim, metric, debug, rows: roll!.rows }).toEqual({ dim, metric, debug, rows: scan.rows });
        // A short limit is the top of the same order.
        expect(breakdownFromRollups(q, dim, metric, 3)!.rows).toEqual(scan.rows.slice(0, 3));
        answered++;
      }
    }
  }
  return answered;
}

/** Windows over the data: all of it, and ones starting or ending on days sessions cross into. */
function windows(tz: string): [number, number][] {
  const first = zone(tz).day(START);
  return [
    [first - 1, first + DAYS + 1],
    [first + 2, first + 3],
    [first + 2, first + 2],
    [first + 1, first + 4],
    [first + 3, first + DAYS],
  ];
}

describe("breakdowns from the rollups equal the scan", () => {
  for (const tz of ["UTC", "America/Los_Angeles", "Asia/Kathmandu"]) {
    test(`${tz}: every dimension and metric, windows across the days sessions cross`, async () => {
      const app = 41;
      const events = dataFor(app, tz, 41);
      const s = await storeWith(app, tz, events);
      const now = START + (DAYS + 3) * DAY_MS;
      await build(s, now);
      // Sessions crossing midnight are kept one by one on some days; the others are summed.
      const z = zone(tz);
      const day = z.day(START) + 2;
      const built = buildBreakdownDays(s.chunks(app, z.dayStart(day - 2), z.dayStart(day + 3)), z, [day], ["pathname"]);
      expect(built.get(`${day}|0`)!.get("pathname")!.spanIds.length).toBeGreaterThan(0);
      for (const [from, to] of windows(tz)) compare(s, app, tz, from, to, now);
      await s.close();
    });
  }

  test("days not built yet (today, yesterday) are built at query time; more than TAIL_DAYS of them are scanned", async () => {
    const tz = "America/Los_Angeles";
    const app = 42;
    const s = await storeWith(app, tz, dataFor(app, tz, 42));
    const z = zone(tz);
    const first = z.day(START);
    // The clock an hour into the last day of the data: it and the day before (not over for
    // BREAKDOWN_SETTLE_MS yet) are not built.
    const now = z.dayStart(first + DAYS - 1) + HOUR_MS;
    await build(s, now);
    expect(s.rollups.breakdownDay(app, first + DAYS - 1, false)).toBeNull();
    expect(s.rollups.breakdownDay(app, first + DAYS - 2, false)).toBeNull();
    expect(s.rollups.breakdownDay(app, first + DAYS - 3, false)).not.toBeNull();
    compare(s, app, tz, first, first + DAYS - 1, now);
    compare(s, app, tz, first + DAYS - 2, first + DAYS - 1, now, ["name", "pathname", "country"]);
    // A store whose days are not built (an upgraded data directory, before the rollup job):
    // three days to build is more than a query builds, so it answers null and the caller scans.
    const fresh = await storeWith(app, tz, dataFor(app, tz, 42));
    expect(TAIL_DAYS).toBe(2);
    const q = contextOf(fresh, app, tz, first, first + 2, false, now);
    expect(breakdownFromRollups(q, "pathname", "sessions", 10)).toBeNull();
    await build(fresh, now);
    compare(fresh, app, tz, first, first + 2, now, ["pathname", "name", "browser"]);
    await s.close();
    await fresh.close();
  });

  test("late events and sessions going on into a built day make it be built again; compaction changes nothing", async () => {
    const tz = "Asia/Kathmandu";
    const app = 43;
    const events = dataFor(app, tz, 43);
    const s = await storeWith(app, tz, events);
    const z = zone(tz);
    const first = z.day(START);
    const now = START + (DAYS + 3) * DAY_MS;
    await build(s, now);
    const d = first + 2;
    expect(s.rollups.breakdownDay(app, d, false)).not.toBeNull();
    // A session of day d, single there until now, gets an event on the next day.
    const single = events.find(
      (e) => z.day(e.ts) === d && !e.debug && events.filter((f) => f.session === e.session).every((f) => z.day(f.ts) === d),
    )!;
    const late = { ...single, ts: z.dayStart(d + 1) + HOUR_MS, name: "late", dims: { ...single.dims, pathname: "/late" } };
    s.append([late]);
    expect(s.rollups.breakdownDay(app, d, false)).toBeNull();
    expect(s.rollups.breakdownDay(app, d + 1, false)).toBeNull();
    // Answered meanwhile, the two days built at query time.
    compare(s, app, tz, first, first + DAYS, now, ["pathname", "name", "country"]);
    await build(s, now);
    expect(s.rollups.breakdownDay(app, d, false)).not.toBeNull();
    compare(s, app, tz, first, first + DAYS, now);
    compare(s, app, tz, d + 1, d + 2, now);
    // Compaction: the same events in day files; the rollups still answer, equal to the scan.
    await flush(s, 2);
    for (let k = first; k <= first + DAYS + 1; k++) await s.compactDay(app, new Date(k * DAY_MS).toISOString().slice(0, 10));
    await build(s, now);
    compare(s, app, tz, first, first + DAYS, now);
    await s.close();
  });

  test("a build that a day's new events overtake while it runs in a query thread is not kept", async () => {
    const app = 46;
    const events = dataFor(app, "UTC", 46);
    const s = await storeWith(app, "UTC", events);
    const now = START + (DAYS + 3) * DAY_MS;
    while (s.refreshRollups(now, 7) > 0);
    const days = s.rollups.breakdownDaysToBuild(app, now);
    const [d, other] = [days[1]!, days[3]!];
    const late = { ...events[0]!, ts: d * DAY_MS + 5 * HOUR_MS, session: 991, visitor: 992 };
    // An event on another day while the build runs: kept.
    const a = s.rollups.beginBuild(app, d);
    s.append([{ ...late, ts: other * DAY_MS + 5 * HOUR_MS }]);
    expect(a.end()).toBe(true);
    // An event on the day itself: not kept (the next run builds it again).
    const b = s.rollups.beginBuild(app, d);
    s.append([late]);
    expect(b.end()).toBe(false);
    await build(s, now);
    expect(s.rollups.breakdownDay(app, d, false)).not.toBeNull();
    compare(s, app, "UTC", d - 1, d + 1, now);
    await s.close();
  });

  test("a zone change: scanned until the days are built again in the new zone, then equal the scan there", async () => {
    const app = 44;
    const events = dataFor(app, "UTC", 44);
    const s = await storeWith(app, "UTC", events);
    const now = START + (DAYS + 3) * DAY_MS;
    await build(s, now);
    const tz = "Asia/Kathmandu";
    s.setZone(app, tz);
    const first = zone(tz).day(START);
    const q = contextOf(s, app, tz, first, first + DAYS, false, now);
    expect(q.rollupZone).toBeNull();
    expect(breakdownFromRollups(q, "pathname", "events", 10)).toBeNull();
    await build(s, now);
    for (const [from, to] of windows(tz)) compare(s, app, tz, from, to, now);
    await s.close();
  });

  test("filters, entry, exit and properties are left to the scan", async () => {
    const app = 45;
    const s = await storeWith(app, "UTC", dataFor(app, "UTC", 45));
    const now = START + (DAYS + 3) * DAY_MS;
    await build(s, now);
    const first = zone("UTC").day(START);
    const q = contextOf(s, app, "UTC", first, first + DAYS, false, now);
    for (const dim of ["entry", "exit", "prop:plan"]) expect(breakdownFromRollups(q, dim, "events", 10)).toBeNull();
    const runner = new QueryRunner({ store: s, now: () => now, budgetMs: 60_000, maxWaiting: 10 });
    const filtered = runner.context(app, "web", windowOfDays(first, first + DAYS, "UTC"), false, [{ dim: "country", values: ["US"] }], {
      check() {},
    });
    expect(breakdownFromRollups(filtered, "pathname", "events", 10)).toBeNull();
    await s.close();
  });
});

describe("the cost of a day's breakdowns (docs/storage.md)", () => {
  test("encoded, a day's dimension is its value strings once and 8 bytes a count", () => {
    const values = Array.from({ length: 1000 }, (_, k) => `/page/${k}`);
    const n = values.length;
    const bytes = encodeDimDay({
      values,
      events: new Float64Array(n),
      users: new Float64Array(n),
      single: new Float64Array(n),
      spanIds: new Float64Array(10),
      spanVals: new Uint32Array(10),
    }).byteLength;
    expect(bytes).toBeLessThan(JSON.stringify(values).length + 24 * n + 12 * 10 + 16);
  });
});
