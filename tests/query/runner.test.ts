import { describe, expect, test } from "bun:test";
import { EventStore, queryChunks, type QueryChunks } from "../../src/store/store.ts";
import { decodeFile, inlineFiles, type PartitionFiles } from "../../src/store/files.ts";
import { eventsOf, type Chunk } from "../../src/store/chunk.ts";
import { createLogger } from "../../src/infra/log.ts";
import { DAY_MS } from "../../src/util/time.ts";
import { QueryRunner, type Budget, type RunnerOptions } from "../../src/query/runner.ts";
import { complete, type Work } from "../../src/query/work.ts";
import { period } from "../../src/query/ops/overview.ts";
import { breakdown } from "../../src/query/ops/breakdown.ts";
import { sessionsList } from "../../src/query/ops/sessions.ts";
import { resolveWindow } from "../../src/query/window.ts";
import { canonical, randomEvents } from "../helpers/events.ts";
import { tempDir } from "../helpers/tmp.ts";

const log = createLogger("silent");
const START = Date.UTC(2026, 10, 1);

/**
 * A store over a directory of partitions (`events` over four days, hourly) written by another,
 * with a cache of `cacheBytes`; a query may hold `queryBytes` of decoded partitions (64 MiB
 * unless given). With 6,000 events the files are larger than their decoded columns (a file's
 * fixed parts dominate); with 60,000 they decode about twice as large, as real ones do.
 */
async function storeWithPartitions(cacheBytes: number, files?: PartitionFiles, queryBytes = 64 << 20, events = 6000) {
  const dir = tempDir("sextant-runner-");
  const w = new EventStore({ dir, log, cacheBytes: 64 << 20, flushEvents: 1e9 });
  const evs = randomEvents(7, events, { seed: 11, start: START, spanMs: 4 * DAY_MS });
  w.append(evs);
  const heads = w.takeHeads();
  w.finishFlush(heads, await w.writeHeads(heads, 3));
  await w.close();
  const s = new EventStore({ dir, log, cacheBytes, flushEvents: 1e9, files, queryBytes });
  const parts = s.open(3).partitions;
  return { s, evs, parts };
}

/** A query reading every event of the window's chunks: their count. */
const readAll = (runner: QueryRunner, window: ReturnType<typeof resolveWindow>) =>
  function* (budget: Budget, reader: QueryChunks): Work<number> {
    return runner
      .context(7, "app", window, false, [], budget, reader)
      .chunks(window.startMs, window.endMs)
      .reduce((n, c) => n + c.n, 0);
  };

/** The tests' clock, the window over all of storeWithPartitions' days, and a runner over a store at that clock. */
const now = START + 5 * DAY_MS;
const FULL = resolveWindow("2026-11-01", "2026-11-05", now);
const runnerOf = (s: EventStore, o: Partial<RunnerOptions> = {}) =>
  new QueryRunner({ store: s, now: () => now, budgetMs: 60_000, maxWaiting: 10, ...o });

describe("query runner", () => {
  // Reading partitions that the decoded cache does not hold used to decode them on the
  // event loop, holding every ingest request for up to the query budget (9 s).
  test("partitions missing from the cache are decoded off the event loop and pinned: the same events, none decoded inline", async () => {
    // A cache of one byte keeps only the partition remembered last: every query reads more
    // than the cache holds.
    const { s, evs, parts } = await storeWithPartitions(1);
    expect(parts).toBeGreaterThan(20);
    const runner = runnerOf(s);
    const window = FULL;
    let runs = 0;
    const seen = await runner.run(null, function* (budget, reader) {
      runs++;
      const q = runner.context(7, "app", window, false, [], budget, reader);
      const chunks: Chunk[] = q.chunks(window.startMs, window.endMs);
      // A second read of the same range in the same query: the pinned chunks, no decode.
      expect(q.chunks(window.startMs, window.endMs)).toEqual(chunks);
      return canonical(chunks.flatMap((c) => [...eventsOf(c)]));
    });
    expect(seen).toEqual(canonical(evs));
    expect(runs).toBe(2); // stopped at the first read, then again with everything decoded
    expect(s.cacheStats().decodedInline).toBe(0);
    expect(s.cacheStats().files).toBe(1);

    // Without a reader (exports, rollups), chunks() still decodes on the calling thread.
    s.chunks(7, -Infinity, Infinity);
    expect(s.cacheStats().decodedInline).toBeGreaterThan(0);
    await s.close();
  });

  test("a query that would hold more decoded partitions than its memory budget answers query_too_heavy; a narrower one is answered", async () => {
    // What every partition takes decoded, measured with no memory budget to speak of.
    const all = await storeWithPartitions(64 << 20);
    const full = FULL;
    const day = resolveWindow("2026-11-02", "2026-11-02", now);
    const r0 = runnerOf(all.s);
    let held = 0;
    await r0.run(null, function* (budget, reader) {
      const n = yield* readAll(r0, full)(budget, reader);
      held = reader.bytes;
      return n;
    });
    expect(held).toBeGreaterThan(0);
    await all.s.close();

    // Half of that may be held by one query: every day is too much (refused before it has
    // decoded them all: here before any, the files being larger than their decoded columns),
    // one day is answered.
    let decodes = 0;
    const files: PartitionFiles = { ...inlineFiles, decode: (f) => (decodes++, Promise.resolve(decodeFile(f))) };
    const { s, evs, parts } = await storeWithPartitions(1, files, Math.floor(held / 2));
    const runner = runnerOf(s);
    const refused = runner.run(null, readAll(runner, full));
    await expect(refused).rejects.toMatchObject({ code: "query_too_heavy" });
    await expect(refused).rejects.toThrow(/memory/);
    expect(decodes).toBeLessThan(parts);
    const inDay = evs.filter((e) => e.ts >= day.startMs && e.ts < day.endMs).length;
    expect(inDay).toBeGreaterThan(0);
    expect(await runner.run(null, readAll(runner, day))).toBe(inDay);
    // Once the store has seen how large partitions decode, the full query is refused before
    // any decoding.
    decodes = 0;
    await expect(runner.run(null, readAll(runner, full))).rejects.toMatchObject({ code: "query_too_heavy" });
    expect(decodes).toBe(0);
    // A refusal for memory is kept like an answer (a dashboard polls): the same query is not
    // run again while it is.
    let runs = 0;
    const counted = (budget: Budget, reader: QueryChunks) => (runs++, readAll(runner, full)(budget, reader));
    await expect(runner.run("full", counted)).rejects.toMatchObject({ code: "query_too_heavy" });
    await expect(runner.run("full", counted)).rejects.toMatchObject({ code: "query_too_heavy" });
    expect(runs).toBe(1);
    await s.close();
  });

  // Decodes run on the server's core: in the ingest bench's kept logs a dashboard's overview
  // decoded for 3-7 s to be refused in the end, when the estimate before decoding took the
  // smallest decoded size per file byte seen in any partition.
  test("decoding for a query stops at the first partition that shows the rest would not fit; a query that fits is answered", async () => {
    const held = async (s: EventStore) => {
      const reader = queryChunks();
      const parts = s.plan(7, -Infinity, Infinity).partitions;
      expect(await s.decodeOffThread(parts, reader, performance.now() + 60_000)).toBe("done");
      return { bytes: reader.bytes, file: parts.reduce((n, p) => n + p.bytes, 0) };
    };
    const all = await storeWithPartitions(64 << 20, undefined, 64 << 20, 60_000);
    const full = await held(all.s);
    await all.s.close();
    // Real partitions decode larger than their files: a fresh store, assuming as large,
    // lets such a query start.
    expect(full.bytes).toBeGreaterThan(1.5 * full.file);
    const budget = Math.round(full.file * 1.2);

    let decodes = 0;
    const files: PartitionFiles = { ...inlineFiles, decode: (f) => (decodes++, Promise.resolve(decodeFile(f))) };
    const { s, parts } = await storeWithPartitions(1, files, budget, 60_000);
    const runner = runnerOf(s);
    await expect(runner.run(null, readAll(runner, FULL))).rejects.toMatchObject({ code: "query_too_heavy" });
    expect(decodes).toBeGreaterThan(0);
    expect(decodes).toBeLessThanOrEqual(2);
    expect(parts).toBeGreaterThan(50);
    // Asked again, refused before any decoding: the app's partitions are known to decode larger.
    decodes = 0;
    await expect(runner.run(null, readAll(runner, FULL))).rejects.toMatchObject({ code: "query_too_heavy" });
    expect(decodes).toBe(0);
    // Pinned partitions are counted as they are: the estimate goes only to those still to decode.
    const reader = queryChunks();
    expect(await s.decodeOffThread(s.plan(7, -Infinity, Infinity).partitions, reader, performance.now() + 60_000)).toBe("over_memory");
    expect(reader.bytes).toBeLessThanOrEqual(budget);
    await s.close();

    // A query that just fits is not refused, though its partitions decode unevenly.
    const fits = await storeWithPartitions(1, undefined, full.bytes, 60_000);
    const r = runnerOf(fits.s);
    expect(await r.run(null, readAll(r, FULL))).toBe(60_000);
    expect(await r.run(null, readAll(r, FULL))).toBe(60_000);
    await fits.s.close();
  });

  test("a query whose decoding outlasts its budget answers query_too_heavy at the budget, even with a decode that never ends; what was decoded stays cached", async () => {
    // The thread serves three decodes, then hangs (a stuck disk, a thread gone quiet): the
    // fourth decode's promise never settles, so an answer at all means the runner stopped
    // waiting for it (how soon after the budget is a figure for bench/, not a test).
    let served = 0;
    let hung = 0;
    const files: PartitionFiles = {
      ...inlineFiles,
      decode: (f) => (++served <= 3 ? Promise.resolve(decodeFile(f)) : (hung++, new Promise<never>(() => {}))),
    };
    const { s, parts } = await storeWithPartitions(64 << 20, files);
    const window = FULL;
    const runner = runnerOf(s, { budgetMs: 300 });
    const t0 = performance.now();
    const refused = runner.run(null, readAll(runner, window));
    await expect(refused).rejects.toMatchObject({ code: "query_too_heavy" });
    // Refused for time, not memory; and not before the budget was spent (a lower bound holds
    // on any machine, however loaded; less a few ms for timers' rounding).
    await expect(refused).rejects.toThrow(/more time than its budget/);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(295);
    expect(hung).toBe(1);
    expect(s.cacheStats()).toMatchObject({ files: 3, decodedInline: 0 });
    expect(parts).toBeGreaterThan(3);
  });

  test("a partition the thread cannot decode is decoded inline, as before: the same answer", async () => {
    const files: PartitionFiles = { ...inlineFiles, decode: () => Promise.reject(new Error("thread gone")) };
    const { s, parts } = await storeWithPartitions(64 << 20, files);
    const window = FULL;
    const runner = runnerOf(s);
    expect(await runner.run(null, readAll(runner, window))).toBe(6000);
    expect(s.cacheStats().decodedInline).toBe(parts);
  });

  test("queries wanting the same partitions share one decode of each", async () => {
    let decodes = 0;
    const files: PartitionFiles = { ...inlineFiles, decode: async (f) => (decodes++, await Bun.sleep(1), decodeFile(f)) };
    const { s, parts } = await storeWithPartitions(64 << 20, files);
    const window = FULL;
    const runner = runnerOf(s);
    expect(await Promise.all([1, 2, 3, 4].map(() => runner.run(null, readAll(runner, window))))).toEqual([6000, 6000, 6000, 6000]);
    expect(decodes).toBe(parts);
  });

  // A dashboard's filtered overview of tens of millions of events held every ingest request
  // for up to 270 ms when operators ran in one piece.
  test("operators run in slices with the event loop's other work between them, and answer as in one piece", async () => {
    const { s, parts } = await storeWithPartitions(64 << 20);
    const window = FULL;
    const US = [{ dim: "country", values: ["US"] }];
    const query = (runner: QueryRunner) =>
      function* (budget: Budget, reader: QueryChunks) {
        const ctx = (filters: typeof US) => runner.context(7, "app", window, false, filters, budget, reader);
        return {
          overview: yield* period(ctx(US)),
          breakdown: yield* breakdown(ctx([]), "country", "users", 10),
          sessions: yield* sessionsList(ctx(US), 20),
        };
      };
    // Turns of the event loop with other work in them (a callback that puts itself back
    // each turn), counted between the operators' first and last steps: how often the query
    // let other work run while it was under way. Counted, not timed: a loaded machine
    // changes how long a slice takes, not how many turns the loop gets between steps.
    let ticks = 0;
    let spinning = true;
    const spin = () => {
      ticks++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    const timed = async (runner: QueryRunner) => {
      let during = -1;
      const value = await runner.run(null, function* (budget, reader) {
        // Its first step runs when the operator's work starts; its return, when it ends (the
        // last run, should the first have stopped to decode).
        const t0 = ticks;
        const v = yield* query(runner)(budget, reader);
        during = ticks - t0;
        return v;
      });
      return { value, ticks: during };
    };
    const whole = runnerOf(s, { sliceMs: 1e9 });
    await timed(whole); // partitions decoded and cached
    const inOnePiece = await timed(whole);
    const sliced = await timed(runnerOf(s, { sliceMs: 0 }));
    spinning = false;
    // In one piece nothing else runs between the first step and the last.
    expect(inOnePiece.ticks).toBe(0);
    // Every chunk of each operator is a step (and each bucket of sessions).
    expect(sliced.ticks).toBeGreaterThan(3 * parts);
    expect(sliced.value).toEqual(inOnePiece.value);
    expect(sliced.value.overview.totals.events).toBeGreaterThan(0);
    // And as the operators give it without the runner.
    const plain = runnerOf(s);
    expect(sliced.value).toEqual({
      overview: complete(period(plain.context(7, "app", window, false, US, { check() {} }))),
      breakdown: complete(breakdown(plain.context(7, "app", window, false, [], { check() {} }), "country", "users", 10)),
      sessions: complete(sessionsList(plain.context(7, "app", window, false, US, { check() {} }), 20)),
    });
    await s.close();
  });

  test("the same query asked again while it runs shares its answer or its error; another query runs on its own", async () => {
    const { s, evs } = await storeWithPartitions(1);
    const runner = runnerOf(s);
    const window = FULL;
    let runs = 0;
    const counted = (budget: Budget, reader: QueryChunks) => (runs++, readAll(runner, window)(budget, reader));
    // Partitions to decode first: the first is still under way when the others ask.
    expect(await Promise.all([runner.run("a", counted), runner.run("a", counted), runner.run("b", counted)])).toEqual([
      evs.length,
      evs.length,
      evs.length,
    ]);
    // "a" twice and "b" once, each run again once after its decode.
    expect(runs).toBe(4);
    let failed = 0;
    const failing = function* (): Work<number> {
      failed++;
      throw new Error("broken");
    };
    const both = [runner.run("c", failing), runner.run("c", failing)];
    for (const p of both) await expect(p).rejects.toThrow("broken");
    expect(failed).toBe(1);
    await s.close();
  });

  test("a query waiting for its partitions to be decoded holds no turn: a query that reads nothing to decode answers first", async () => {
    const { s, evs } = await storeWithPartitions(1);
    const runner = runnerOf(s);
    const window = FULL;
    const order: string[] = [];
    const heavy = runner.run(null, readAll(runner, window)).then((n) => (order.push("heavy"), n));
    const light = runner
      .run(null, function* () {
        return 42;
      })
      .then((n) => (order.push("light"), n));
    expect(await Promise.all([heavy, light])).toEqual([evs.length, 42]);
    expect(order).toEqual(["light", "heavy"]);
    await s.close();
  });
});
