import { describe, expect, test } from "bun:test";
import { readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { EventStore, queryChunks } from "../../src/store/store.ts";
import { derive, eventsOf, HeadChunk } from "../../src/store/chunk.ts";
import { createLogger } from "../../src/infra/log.ts";
import { dayNumber, medianOf } from "../../src/store/rollups.ts";
import { DAY_MS } from "../../src/util/time.ts";
import type { StoredEvent } from "../../src/model/event.ts";
import { canonical, randomEvents } from "../helpers/events.ts";
import { refDaily, refMedian } from "../helpers/reference.ts";
import { tempDir } from "../helpers/tmp.ts";
import { threadsOf } from "../helpers/threads.ts";

const log = createLogger("silent");
const mk = (dir: string, cacheBytes = 64 << 20) => new EventStore({ dir, log, cacheBytes, flushEvents: 1e9 });
const tmp = () => tempDir("sextant-store-");
const files = (dir: string) => {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const f of readdirSync(d, { withFileTypes: true }))
      f.isDirectory() ? walk(join(d, f.name)) : out.push(relative(dir, join(d, f.name)));
  };
  walk(dir);
  return out.sort();
};
const flush = async (s: EventStore, tag: number) => {
  const heads = s.takeHeads();
  s.finishFlush(heads, await s.writeHeads(heads, tag));
};

/** A store that passes flushed heads' arrays on from 1,000 events, and a reader of app 1's live head. */
function pooling() {
  const dir = tmp();
  const s = new EventStore({ dir, log, cacheBytes: 64 << 20, flushEvents: 1e9, poolMinEvents: 1000 });
  const head = () => s.chunks(1, -Infinity, Infinity).find((c) => c instanceof HeadChunk) as HeadChunk;
  return { dir, s, start: Date.UTC(2026, 10, 1), head };
}

describe("event store", () => {
  test("a flush writes hourly partitions per app; reopening reads the same events", async () => {
    const dir = tmp();
    const s = mk(dir);
    const a = randomEvents(1, 3000, { seed: 1, start: Date.UTC(2026, 10, 1), spanMs: 2 * DAY_MS });
    const b = randomEvents(2, 500, { seed: 2, start: Date.UTC(2026, 10, 1), spanMs: DAY_MS });
    s.append(a);
    s.append(b);
    await flush(s, 10);
    const f = files(dir);
    expect(f.every((x) => /^app=[12]\/date=2026-11-0[1-4]\/hour=\d\d\.t10\.parquet$/.test(x))).toBe(true);
    expect(f.some((x) => x.startsWith("app=2/"))).toBe(true);
    const again = mk(dir);
    expect(again.open(10).partitions).toBe(f.length);
    expect(canonical(again.events(1))).toEqual(canonical(a));
    expect(canonical(again.events(2))).toEqual(canonical(b));
  });

  test("a flushed head's arrays go to the app's next head: flushed, new and exported events all stay right", async () => {
    const { dir, s, start, head } = pooling();
    const a1 = randomEvents(1, 7_000, { seed: 11, start, spanMs: DAY_MS });
    s.append(a1);
    const h1 = head();
    await flush(s, 1);
    const a2 = randomEvents(1, 300, { seed: 12, start, spanMs: DAY_MS });
    s.append(a2);
    const h2 = head();
    // The new head writes over the flushed one's arrays (a copy would be a new buffer).
    expect(h2).not.toBe(h1);
    expect(h2.ts.buffer).toBe(h1.ts.buffer);
    expect(h2.ctx.buffer).toBe(h1.ctx.buffer);
    expect(canonical(s.events(1))).toEqual(canonical([...a1, ...a2]));
    // An export's copy of the head keeps its events while the arrays move on.
    const snap = s.snapshot(1);
    const exported = canonical(snap.flatMap((c) => [...eventsOf(c)]));
    expect(exported).toEqual(canonical([...a1, ...a2]));
    const a3 = randomEvents(1, 8_000, { seed: 13, start: start + DAY_MS, spanMs: DAY_MS });
    s.append(a3);
    await flush(s, 2);
    s.append(a1.slice(0, 5));
    await flush(s, 3);
    const a4 = randomEvents(1, 200, { seed: 14, start, spanMs: 2 * DAY_MS });
    s.append(a4);
    expect(canonical(snap.flatMap((c) => [...eventsOf(c)]))).toEqual(exported);
    const evs = [...a1, ...a2, ...a3, ...a1.slice(0, 5), ...a4];
    const all = canonical(evs);
    expect(canonical(s.events(1))).toEqual(all);
    await flush(s, 4);
    // Memory short (the load shedder's call): the pooled arrays go, the next head grows its own.
    const a5 = randomEvents(1, 3_000, { seed: 15, start, spanMs: DAY_MS });
    s.append(a5);
    const h5 = head();
    await flush(s, 5);
    s.releasePool();
    const a6 = randomEvents(1, 100, { seed: 16, start, spanMs: DAY_MS });
    s.append(a6);
    expect(head().ts.buffer).not.toBe(h5.ts.buffer);
    await flush(s, 6);
    evs.push(...a5, ...a6);
    const again = mk(dir);
    again.open(6);
    expect(canonical(again.events(1))).toEqual(canonical(evs));
    await s.close();
    await again.close();
  });

  test("a query reads a head as it stood when first read, through appends, a flush and the next head; its arrays go on only once the query lets go", async () => {
    const { s, start, head } = pooling();
    const a1 = randomEvents(1, 5_000, { seed: 21, start, spanMs: DAY_MS });
    s.append(a1);
    const h1 = head();
    const reader = queryChunks();
    const [view] = s.chunks(1, -Infinity, Infinity, undefined, reader);
    expect(view).not.toBe(h1);
    const seen = canonical([...eventsOf(view!)]);
    expect(seen).toEqual(canonical(a1));
    // More events for the same head (the query has yielded to ingest): not in the view, and
    // the same view on the query's next read.
    const a2 = randomEvents(1, 3_000, { seed: 22, start, spanMs: DAY_MS });
    s.append(a2);
    expect(s.chunks(1, -Infinity, Infinity, undefined, reader)).toEqual([view!]);
    await flush(s, 1);
    // The next head grows arrays of its own while the view is held, so writing it does not
    // change what the query reads.
    const a3 = randomEvents(1, 4_000, { seed: 23, start, spanMs: DAY_MS });
    s.append(a3);
    const h3 = head();
    expect(canonical([...eventsOf(view!)])).toEqual(seen);
    expect(h3.ts.buffer).not.toBe(h1.ts.buffer);
    // Another query reads the new head through the next flush; the first lets go: the first
    // head's arrays go to the head after that flush.
    const reader2 = queryChunks();
    const [view3] = s.chunks(1, -Infinity, Infinity, undefined, reader2).filter((c) => c.n === h3.n && c.ts === h3.ts);
    const seen3 = canonical([...eventsOf(view3!)]);
    s.release(reader);
    await flush(s, 2);
    s.append(randomEvents(1, 6_000, { seed: 24, start, spanMs: DAY_MS }));
    const h4 = head();
    expect(h4.ts.buffer).toBe(h1.ts.buffer);
    expect(canonical([...eventsOf(view3!)])).toEqual(seen3);
    // The second lets go, and a third reads the next head through the next flush: the
    // second head's arrays go to the head after it.
    s.release(reader2);
    const reader3 = queryChunks();
    s.chunks(1, -Infinity, Infinity, undefined, reader3);
    await flush(s, 3);
    s.append(randomEvents(1, 100, { seed: 25, start, spanMs: DAY_MS }));
    expect(head().ts.buffer).toBe(h3.ts.buffer);
    s.release(reader3);
    expect(canonical(s.events(1)).length).toBe(5_000 + 3_000 + 4_000 + 6_000 + 100);
    await s.close();
  });

  test("a query's budget holds while a cold cache decodes: checked between columns, and what was decoded stays", async () => {
    const dir = tmp();
    const s = mk(dir);
    const evs = randomEvents(4, 3000, { seed: 4, start: Date.UTC(2026, 10, 1), spanMs: 2 * DAY_MS });
    s.append(evs);
    await flush(s, 10);
    const cold = mk(dir);
    const parts = cold.open(10).partitions;
    expect(parts).toBeGreaterThan(4);
    // Checks made by a full decode, counted on a store of its own.
    let calls = 0;
    const counter = mk(dir);
    counter.open(10);
    counter.chunks(4, -Infinity, Infinity, () => void calls++);
    const perPartition = calls / parts;
    expect(perPartition).toBeGreaterThan(10); // columns, then the chunk: not once per file
    // Over budget part way into the third partition: a throw, two partitions kept.
    let n = 0;
    const stopAfter = (k: number) => () => {
      if (++n > k) throw new Error("over budget");
    };
    expect(() => cold.chunks(4, -Infinity, Infinity, stopAfter(2 * perPartition + 3))).toThrow("over budget");
    expect(cold.cacheStats().files).toBe(2);
    // The same query again goes further, then all the way, with the same events.
    n = 0;
    expect(() => cold.chunks(4, -Infinity, Infinity, stopAfter(2 * perPartition + 3))).toThrow("over budget");
    expect(cold.cacheStats().files).toBe(4);
    expect(canonical(cold.events(4))).toEqual(canonical(evs));
  });

  test("compaction merges a day's files into one, sources gone, events unchanged", async () => {
    const dir = tmp();
    const s = mk(dir);
    const evs = randomEvents(3, 4000, { seed: 3, start: Date.UTC(2026, 10, 5), spanMs: DAY_MS - 3_600_000 });
    s.append(evs.slice(0, 2000));
    await flush(s, 5);
    s.append(evs.slice(2000));
    await flush(s, 9);
    const before = files(dir).filter((x) => x.includes("date=2026-11-05"));
    expect(before.length).toBeGreaterThan(2);
    expect((await s.compactDay(3, "2026-11-05"))?.tag).toBe(9);
    expect(files(dir).filter((x) => x.includes("date=2026-11-05"))).toEqual(["app=3/date=2026-11-05/day.t9.parquet"]);
    expect(canonical(s.events(3))).toEqual(canonical(evs));
    const re = mk(dir);
    re.open(9);
    expect(canonical(re.events(3))).toEqual(canonical(evs));
  });

  test("queries plan by app and time before reading: pruning without I/O", async () => {
    const dir = tmp();
    const s = mk(dir);
    s.append(randomEvents(4, 2000, { seed: 4, start: Date.UTC(2026, 10, 1), spanMs: 10 * DAY_MS }));
    s.append(randomEvents(5, 500, { seed: 5, start: Date.UTC(2026, 10, 1), spanMs: 10 * DAY_MS }));
    await flush(s, 1);
    // A flush leaves its partitions decoded in the cache: plan on a store just opened.
    expect(s.cacheStats().files).toBeGreaterThan(0);
    const re = mk(dir);
    re.open(1);
    const from = Date.UTC(2026, 10, 3);
    const to = Date.UTC(2026, 10, 5);
    const plan = re.plan(4, from, to);
    expect(plan.partitions.length).toBeGreaterThan(0);
    expect(plan.partitions.every((p) => p.app === 4 && p.endMs > from && p.startMs < to)).toBe(true);
    expect(plan.partitions.every((p) => p.date === "2026-11-03" || p.date === "2026-11-04")).toBe(true);
    expect(plan.heads).toBe(0);
    expect(re.cacheStats().files).toBe(0); // planning read nothing
    const inRange = [...re.chunks(4, from, to)].reduce((n, c) => n + c.n, 0);
    expect(inRange).toBeGreaterThan(0);
  });

  test("a flush hands its partitions to the cache decoded: the first query reads no file", async () => {
    const dir = tmp();
    const s = mk(dir);
    const evs = randomEvents(4, 3000, { seed: 12, start: Date.UTC(2026, 10, 1), spanMs: 2 * DAY_MS, web: true });
    s.append(evs);
    await flush(s, 1);
    const plan = s.plan(4, -Infinity, Infinity);
    expect(s.cacheStats().files).toBe(plan.partitions.length);
    // Removing the files shows no query reads them; the answers are the events appended.
    for (const f of files(dir)) rmSync(join(dir, f));
    expect(canonical(s.events(4))).toEqual(canonical(evs));
  });

  test("a data set larger than the cache stays queryable, with the cache under its budget", async () => {
    const dir = tmp();
    const s = mk(dir, 200_000);
    const evs = randomEvents(6, 20_000, { seed: 6, start: Date.UTC(2026, 10, 1), spanMs: 5 * DAY_MS });
    s.append(evs);
    await flush(s, 1);
    expect(s.count(6)).toBe(20_000);
    expect(canonical(s.events(6))).toEqual(canonical(evs));
    expect(s.cacheStats().bytes).toBeLessThanOrEqual(200_000 + 200_000); // at most one file over, while in use
  });

  // Linux only: per-thread nice values, read from /proc.
  test.skipIf(process.platform !== "linux")(
    "queries' decodes run in a thread of their own at the process's priority; the writer's runs lower",
    async () => {
      const threads = () => new Map(threadsOf().map(({ tid, comm, nice }) => [String(tid), { comm, nice }]));
      // Threads of earlier tests in this process (one may still be ending) are not this store's.
      const earlier = threads();
      // A query may hold more than the cache here: it reads every partition.
      const s = new EventStore({ dir: tmp(), log, cacheBytes: 200_000, flushEvents: 1e9, writerNice: 4, queryBytes: 64 << 20 });
      try {
        const evs = randomEvents(8, 20_000, { seed: 8, start: Date.UTC(2026, 10, 1), spanMs: 5 * DAY_MS });
        s.append(evs);
        await flush(s, 1);
        const before = threads();
        const own = before.get(String(process.pid))!.nice;
        // The writer lowered itself by the steps asked (its first message, answered before the flush).
        expect([...before].filter(([tid, t]) => !earlier.has(tid) && t.comm === "Worker" && t.nice === own + 4)).toHaveLength(1);
        // The cache holds a few of the partitions: the rest are decoded for the query.
        const parts = s.plan(8, -Infinity, Infinity).partitions;
        const reader = queryChunks();
        expect(await s.decodeOffThread(parts, reader, performance.now() + 20_000)).toBe("done");
        expect(reader.inline.size).toBe(0);
        expect(canonical(parts.flatMap((p) => [...eventsOf(reader.pinned.get(p.file)!)]))).toEqual(canonical(evs));
        // One worker thread more, at the process's own priority: the reader. (The engine may
        // start threads of its own meanwhile, a collector's say: only workers are counted.)
        const added = [...threads()].filter(([tid, t]) => !before.has(tid) && t.comm === "Worker").map(([, t]) => t);
        expect(added).toEqual([{ comm: "Worker", nice: own }]);
      } finally {
        await s.close();
      }
    },
  );

  test("what queries derive from a cached partition counts in the cache's bytes", async () => {
    const dir = tmp();
    const s = mk(dir);
    s.append(randomEvents(4, 3000, { seed: 13, start: Date.UTC(2026, 10, 1), spanMs: 2 * DAY_MS, web: true }));
    await flush(s, 1);
    const before = s.cacheStats().bytes;
    const [c] = s.chunks(4, -Infinity, Infinity);
    expect(
      derive(
        c!,
        "test",
        () => new Uint8Array(5000),
        (v) => v.byteLength,
      ).byteLength,
    ).toBe(5000);
    expect(
      derive(
        c!,
        "test",
        () => new Uint8Array(1),
        (v) => v.byteLength,
      ).byteLength,
    ).toBe(5000); // kept
    s.chunks(4, -Infinity, Infinity); // counted at the next use
    expect(s.cacheStats().bytes).toBe(before + 5000);
  });

  test("a crash leaves .tmp files and unfinished flushes: opening removes them", async () => {
    const dir = tmp();
    const s = mk(dir);
    s.append(randomEvents(7, 300, { seed: 7 }));
    await flush(s, 3);
    s.append(randomEvents(7, 300, { seed: 8 }));
    const heads = s.takeHeads();
    await s.writeHeads(heads, 8); // written, never checkpointed
    const re = mk(dir);
    const r = re.open(3);
    expect(r.removed).toBeGreaterThan(0);
    expect(files(dir).every((f) => f.includes(".t3."))).toBe(true);
    expect(re.count(7)).toBe(300);
  });
});

describe("rollups (daily_totals) against the reference", () => {
  function check(s: EventStore, app: number, events: StoredEvent[]) {
    for (const debug of [false, true]) {
      const ref = refDaily(events, debug);
      for (const [day, r] of ref) {
        const t = s.rollups.totals(app, dayNumber(day), debug);
        expect({
          day,
          debug,
          events: t.events,
          pageviews: t.pageviews,
          users: t.users,
          sessions: t.sessions,
          bounces: t.bounces,
          median: medianOf(t.durations),
        }).toEqual({
          day,
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

  test("as events arrive, including sessions across midnight", () => {
    const s = mk(tmp());
    // Start at 22:00 so many sessions cross midnight.
    const evs = randomEvents(9, 6000, { seed: 9, start: Date.UTC(2026, 10, 1, 22), spanMs: 3 * DAY_MS, web: true });
    s.append(evs);
    check(s, 9, evs);
    // Sessions idle for two days are folded into their start day: same totals.
    s.rollups.fold(Date.UTC(2026, 10, 10));
    check(s, 9, evs);
  });

  test("sessions arriving in many runs, interleaved and over several appends", () => {
    const s = mk(tmp());
    // In time order, the sessions' events interleave: each session comes in several runs
    // (the store looks a session up once a run), some split between two appends.
    const evs = randomEvents(12, 6000, { seed: 12, start: Date.UTC(2026, 10, 1, 22), spanMs: 3600_000, web: true }).sort(
      (a, b) => a.ts - b.ts,
    );
    for (let i = 0; i < evs.length; i += 37) s.append(evs.slice(i, i + 37));
    check(s, 12, evs);
    s.rollups.fold(Date.UTC(2026, 10, 10));
    check(s, 12, evs);
  });

  test("an event for a long-folded session marks its days dirty; the rollup job recomputes them", async () => {
    const dir = tmp();
    const s = mk(dir);
    const evs = randomEvents(10, 3000, { seed: 10, start: Date.UTC(2026, 10, 1), spanMs: 2 * DAY_MS });
    s.append(evs);
    await flush(s, 1);
    // Two days after the last event, every session is folded.
    const now = Date.UTC(2026, 10, 5);
    s.rollups.fold(now);
    // A late event of an existing session, three days after it (ingest takes up to 7 days).
    const late = { ...evs[0]!, ts: evs[0]!.ts + 3 * DAY_MS, name: "late" };
    s.append([late]);
    expect(s.rollups.dirtyDays().length).toBe(1);
    s.refreshRollups(now);
    expect(s.rollups.dirtyDays()).toEqual([]);
    check(s, 10, [...evs, late]);
  });

  test("a snapshot restores the same totals", () => {
    const s = mk(tmp());
    const evs = randomEvents(11, 2000, { seed: 11, web: true });
    s.append(evs);
    const copy = mk(tmp());
    const snap = s.rollups.snapshot();
    copy.rollups.restore(snap.days, snap.sessions);
    check(copy, 11, evs);
  });
});

describe("generated data through several checkpoints", () => {
  test("every event survives checkpoints that add no log records", async () => {
    const { loadConfig } = await import("../../src/infra/config.ts");
    const { startServer } = await import("../../src/server/server.ts");
    const { ensureUser } = await import("../../src/domain/users.ts");
    const { createOrg } = await import("../../src/domain/orgs.ts");
    const { createApp } = await import("../../src/domain/apps.ts");
    const { runGenerate } = await import("../../src/cli/generate.ts");
    const dir = tempDir("sextant-gen-");
    const base = { dataDir: dir, port: 0, host: "127.0.0.1", log: "silent" as const };
    const s = await startServer(loadConfig([], {}, base));
    const u = ensureUser(s.services.db, "g@example.com", Date.now());
    const { id } = createOrg(s.services.db, u.id, "G", Date.now());
    const app = createApp(s.services.db, { kind: "user", userId: u.id, sessionId: "" }, { org_id: id, kind: "app", name: "A" }, Date.now())
      .app.id;
    await s.stop();
    // A flush every 3,000 events: many checkpoints over the same hours.
    const r = await runGenerate(loadConfig([], {}, { ...base, flushEvents: 3000 }), { app, events: 20_000, days: 2, seed: 1 });
    expect(r.events).toBe(20_000);
    const again = await startServer(loadConfig([], {}, base));
    try {
      expect(again.services.store.count(app)).toBe(20_000);
    } finally {
      await again.stop();
    }
  });

  test("what the partition writer keeps between flushes is taken from the cache budget, and let go when memory is short", async () => {
    // A real partition writer thread: one flush of 60,000 events in one hour pools its
    // working arrays (scratch.ts) and reports them; the cache's budget shrinks by as much.
    const s = new EventStore({ dir: tmp(), log, cacheBytes: 64 << 20, scratchBytes: 32 << 20, flushEvents: 1e9 });
    try {
      expect(s.cacheStats().budget).toBe(64 << 20);
      const events = randomEvents(1, 60_000, { seed: 5, start: Date.UTC(2026, 10, 1, 10), spanMs: 3_000_000 });
      s.append(events);
      await flush(s, 1);
      const budget = s.cacheStats().budget;
      expect(budget).toBeLessThan((64 << 20) - (1 << 20));
      expect(budget).toBeGreaterThanOrEqual((64 << 20) - (32 << 20));
      // A second flush through the same pool: the first one's chunks, handed over to this
      // thread, must be untouched by it.
      const more = randomEvents(1, 60_000, { seed: 6, start: Date.UTC(2026, 10, 1, 12), spanMs: 3_000_000 });
      s.append(more);
      await flush(s, 2);
      // The flushed events are all there, from the cache.
      const stored = [...s.chunks(1, Date.UTC(2026, 10, 1), Date.UTC(2026, 10, 2))].flatMap((c) => [...eventsOf(c)]);
      expect(canonical(stored)).toEqual(canonical([...events, ...more]));
      // ...read from the cache, where the flushes put them, not decoded again.
      expect(s.cacheStats().decodedInline).toBe(0);
      // Over the collection bound, not close to shedding: kept.
      s.releasePool(false);
      expect(s.cacheStats().scratchReleases).toBe(0);
      // Close to shedding (the load shedder's hook): the thread lets them go and the cache has its room back.
      s.releasePool(true);
      expect(s.cacheStats().scratchReleases).toBe(1);
      for (let i = 0; i < 200 && s.cacheStats().budget < 64 << 20; i++) await Bun.sleep(10);
      expect(s.cacheStats().budget).toBe(64 << 20);
    } finally {
      await s.close();
    }
  });
});
