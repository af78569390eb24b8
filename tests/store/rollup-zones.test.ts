import { describe, expect, test } from "bun:test";
import { EventStore } from "../../src/store/store.ts";
import { createLogger } from "../../src/infra/log.ts";
import { DayAgg, medianOf } from "../../src/store/rollups.ts";
import { DAY_MS } from "../../src/util/time.ts";
import { textDayNumber } from "../../src/util/zone.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { randomEvents } from "../helpers/events.ts";
import { refDaily, refMedian } from "../helpers/reference.ts";
import { tempDir } from "../helpers/tmp.ts";

// Day totals by local day of an app's zone, against a reference that asks Intl for each
// event's local date (slow and obvious; independent of util/zone.ts).

const log = createLogger("silent");
const mk = () => new EventStore({ dir: tempDir("sextant-rollup-zones-"), log, cacheBytes: 64 << 20, flushEvents: 1e9 });
const flush = async (s: EventStore, tag: number) => {
  const heads = s.takeHeads();
  s.finishFlush(heads, await s.writeHeads(heads, tag));
};

function localDay(tz: string): (ms: number) => string {
  const f = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" });
  return (ms) => f.format(ms);
}

/** Totals per local day for one debug flag: events on their own day, sessions on their first event's. */
const refLocalDaily = (events: StoredEvent[], debug: boolean, tz: string) => refDaily(events, debug, localDay(tz));

function check(s: EventStore, app: number, events: StoredEvent[], tz: string) {
  expect(s.rollupZone(app)).toBe(tz);
  for (const debug of [false, true]) {
    const ref = refLocalDaily(events, debug, tz);
    const days = [...ref.keys()].sort();
    // Every local day of the data, and the days either side (nothing there).
    const first = textDayNumber(days[0]!);
    const last = textDayNumber(days[days.length - 1]!);
    for (let d = first - 1; d <= last + 1; d++) {
      const t = s.rollups.totals(app, d, debug);
      const r = ref.get(t.day) ?? { events: 0, pageviews: 0, users: 0, sessions: 0, bounces: 0, durations: [] };
      expect({
        day: t.day,
        debug,
        events: t.events,
        pageviews: t.pageviews,
        users: t.users,
        sessions: t.sessions,
        bounces: t.bounces,
        median: medianOf(t.durations),
      }).toEqual({
        day: t.day,
        debug,
        events: r.events,
        pageviews: r.pageviews,
        users: r.users,
        sessions: r.sessions,
        bounces: r.bounces,
        median: refMedian(r.durations),
      });
    }
  }
}

/** Runs the rollup job's refresh step by step, as the job does; answers the steps taken. */
function rebuild(s: EventStore, now: number): number {
  let steps = 0;
  while (s.refreshRollups(now, 7) > 0) steps++;
  return steps;
}

// Over the end of US daylight time (2026-11-01, a 25-hour day in Los Angeles), starting
// late in the evening so many sessions cross local midnight.
const START = Date.UTC(2026, 9, 29, 5);
const SPAN = 5 * DAY_MS;

describe("rollups by local day of the app's zone", () => {
  for (const tz of ["America/Los_Angeles", "Asia/Kathmandu"]) {
    test(`${tz}: as events arrive, and with sessions folded, equal the reference by local day`, () => {
      const s = mk();
      s.setZone(21, tz);
      // No data yet: nothing to rebuild, the zone holds at once.
      expect(s.rollupZone(21)).toBe(tz);
      const evs = randomEvents(21, 8000, { seed: 21, start: START, spanMs: SPAN, web: true });
      s.append(evs);
      check(s, 21, evs, tz);
      s.rollups.fold(START + 20 * DAY_MS);
      check(s, 21, evs, tz);
    });
  }

  test("a late event for a folded session recomputes its local days from the stored events", async () => {
    const tz = "Asia/Kathmandu";
    const s = mk();
    s.setZone(22, tz);
    const evs = randomEvents(22, 3000, { seed: 22, start: START, spanMs: 2 * DAY_MS });
    s.append(evs);
    await flush(s, 1);
    const now = START + 5 * DAY_MS;
    s.rollups.fold(now);
    const late = { ...evs[0]!, ts: evs[0]!.ts + 3 * DAY_MS, name: "late" };
    s.append([late]);
    expect(s.rollups.dirtyDays().length).toBe(1);
    // Late events do not stop the rollups from being read.
    expect(s.rollupZone(22)).toBe(tz);
    s.refreshRollups(now);
    expect(s.rollups.dirtyDays()).toEqual([]);
    check(s, 22, [...evs, late], tz);
  });

  test("a zone change rebuilds the days from partitions and heads; queries are told to scan until it is done", async () => {
    const s = mk();
    const app = 23;
    const evs = randomEvents(app, 9000, { seed: 23, start: START, spanMs: 30 * DAY_MS, web: true }).sort((a, b) => a.ts - b.ts);
    const cut = Math.floor(evs.length * 0.7);
    s.append(evs.slice(0, cut));
    await flush(s, 1);
    s.append(evs.slice(cut));
    const now = START + 40 * DAY_MS;
    s.rollups.fold(now);
    check(s, app, evs, "UTC");

    let appended = evs;
    for (const tz of ["America/Los_Angeles", "Asia/Kathmandu", "UTC"]) {
      s.setZone(app, tz);
      expect(s.rollupZone(app)).toBeNull();
      // Events keep coming during the rebuild (a late one, and new ones).
      const more = randomEvents(app, 200, { seed: appended.length, start: now - 2 * DAY_MS, spanMs: DAY_MS, web: true });
      s.append(more);
      appended = [...appended, ...more];
      // Several steps: a month of days, a week a step.
      expect(s.refreshRollups(now, 7)).toBeGreaterThan(0);
      expect(s.rollupZone(app)).toBeNull();
      expect(rebuild(s, now)).toBeGreaterThan(2);
      check(s, app, appended, tz);
      // Setting the same zone again changes nothing.
      s.setZone(app, tz);
      expect(s.rollupZone(app)).toBe(tz);
      expect(s.rollups.dirtyDays()).toEqual([]);
    }
  });

  test("a checkpoint's state keeps the zone and an unfinished rebuild; state from before zones is UTC", async () => {
    const dir = tempDir("sextant-rollup-zones-");
    const s = new EventStore({ dir, log, cacheBytes: 64 << 20, flushEvents: 1e9 });
    const evs = randomEvents(24, 3000, { seed: 24, start: START, spanMs: 10 * DAY_MS, web: true });
    s.append(evs);
    await flush(s, 1);
    s.setZone(24, "America/Los_Angeles");
    s.refreshRollups(START + 20 * DAY_MS, 1);
    const mid = s.rollups.snapshot();
    expect(s.rollupZone(24)).toBeNull();

    // The same directory opened again with that state: the rebuild goes on where it was.
    const copy = new EventStore({ dir, log, cacheBytes: 64 << 20, flushEvents: 1e9 });
    copy.open(1);
    copy.rollups.restore(mid.days, mid.sessions);
    expect(copy.rollupZone(24)).toBeNull();
    rebuild(copy, START + 20 * DAY_MS);
    check(copy, 24, evs, "America/Los_Angeles");
    // Restored and told the same zone: nothing to rebuild.
    const done = copy.rollups.snapshot();
    const again = mk();
    again.rollups.restore(done.days, done.sessions);
    again.setZone(24, "America/Los_Angeles");
    check(again, 24, evs, "America/Los_Angeles");

    // State written before zones existed: no zone field, read as UTC.
    const utc = mk();
    utc.append(evs);
    const old = JSON.parse(utc.rollups.snapshot().days) as Record<string, Record<string, unknown>>;
    for (const v of Object.values(old)) {
      delete v.zone;
      delete v.rebuilding;
    }
    const back = mk();
    back.rollups.restore(JSON.stringify(old), utc.rollups.snapshot().sessions);
    check(back, 24, evs, "UTC");
  });

  test("an app without data takes its zone at once; a dropped app forgets it", () => {
    const s = mk();
    s.setZone(25, "Asia/Kathmandu");
    expect(s.rollupZone(25)).toBe("Asia/Kathmandu");
    // An unknown name counts as UTC.
    s.setZone(26, "Mars/Olympus");
    expect(s.rollupZone(26)).toBe("UTC");
    s.dropApps([25]);
    expect(s.rollupZone(25)).toBe("UTC");
  });
});

describe("the cost of a day's totals (docs/storage.md)", () => {
  test("a day's entry in the checkpoint is at most about 66 KiB (every duration key there is); the sketch at most 16,385 bytes, whatever the traffic", () => {
    const g = new DayAgg();
    for (let i = 0; i < 100_000; i++) g.users.add(i * 7919.5 + 0.25);
    g.events = 500_000;
    g.pageviews = 300_000;
    // Every duration key there is below a day: each second under an hour, each minute above.
    for (let k = 0; k < 3600; k++) g.addSession(k * 1000, k === 0);
    for (let m = 60; m < 24 * 60; m++) g.addSession(m * 60_000, false);
    expect(g.users.serialize().length).toBeLessThanOrEqual(16_385);
    expect(JSON.stringify(["20000|0", g.serialize()]).length).toBeLessThan(68 * 1024);
  });
});
